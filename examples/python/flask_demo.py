"""`make demo`, part 2: the Flask example answering its own requests (Flask's test client, memory store)
until the per-view limit says 429, with the rate-limit headers of every response."""

from flask_app import app


def main() -> None:
    client = app.test_client()
    print("Flask example: GET /search is limited to \"3 per 10 seconds; 20/hour\"")
    for attempt in range(1, 5):
        response = client.get("/search")
        shown = {name: response.headers.get(name) for name in ("RateLimit", "RateLimit-Policy", "Retry-After")}
        headers = ", ".join(f"{name}: {value}" for name, value in shown.items() if value is not None)
        print(f"  request {attempt}: {response.status_code}  {headers}")


if __name__ == "__main__":
    main()
