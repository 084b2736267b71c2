"""Small apps for the process-model tests: each uses ratelock at import (so a forking server's master
holds a live store before it forks) and answers with what its worker decided."""
