"""What a ``ratelock.Client`` takes beside its URL: ``tls_root_ca`` (a private CA for ``rediss://``,
against a real TLS redis-server whose certificate that CA signed), a client certificate
(``tls_client_cert``, ``tls_client_key``) and a memory store's bound
(``max_keys``, ``when_full``), with what a full store answers under each failure policy."""

import asyncio
import uuid

import pytest

import ratelock
import ratelock.asyncio
from conftest import RedisServer, TlsRedisServer


def fresh(kind: str) -> str:
    return f"{kind}:{uuid.uuid4().hex}"


def test_rediss_with_a_private_ca_serves_limits_and_locks(tls_redis_server):
    client = ratelock.Client(tls_redis_server.tls_url, tls_root_ca=tls_redis_server.ca_pem)
    key = fresh("tls")
    assert ratelock.Limiter(client).hit(key, "2/minute").remaining == 1
    # The same key through the plain port: one server, one limit.
    assert ratelock.Limiter(tls_redis_server.url).hit(key, "2/minute").remaining == 0
    bytes_client = ratelock.Client(tls_redis_server.tls_url, tls_root_ca=tls_redis_server.ca_pem.encode())
    with ratelock.DistributedLock(fresh("tls"), url=bytes_client) as lock:
        assert lock.fencing_token is not None and lock.locked()


def test_rediss_with_a_private_ca_on_asyncio(tls_redis_server):
    async def main() -> int:
        client = await ratelock.Client.connect_async(tls_redis_server.tls_url, tls_root_ca=tls_redis_server.ca_pem)
        return (await ratelock.asyncio.Limiter(client).hit(fresh("tls"), "3/minute")).remaining

    assert asyncio.run(main()) == 2


@pytest.mark.parametrize("on_error", ["raise", "allow"])
def test_rediss_without_the_ca_is_a_configuration_error_whatever_on_error_says(tls_redis_server, on_error):
    limiter = ratelock.Limiter(ratelock.Client(tls_redis_server.tls_url), on_error=on_error)
    with pytest.raises(ratelock.ConfigurationError):
        limiter.hit(fresh("tls"), "2/minute")
    # A CA that holds no certificate is bad input, named before any connection.
    with pytest.raises(ratelock.InvalidArgument, match="tls_root_ca"):
        ratelock.Client(tls_redis_server.tls_url, tls_root_ca="not a certificate")


@pytest.mark.parametrize("on_error", ["raise", "allow"])
def test_a_server_that_asks_for_a_client_certificate_is_a_configuration_error(on_error):
    # Redis's default with TLS (tls-auth-clients yes): a client given no certificate is refused by the
    # server's alert on every connection alike, and `allow` must not admit on it as on an outage.
    server = TlsRedisServer(ask_clients=True)
    try:
        client = ratelock.Client(server.tls_url, tls_root_ca=server.ca_pem)
        for _ in range(2):
            with pytest.raises(ratelock.ConfigurationError, match="tls_client_cert"):
                ratelock.Limiter(client, on_error=on_error).hit(fresh("tls"), "2/minute")
    finally:
        server.stop()


@pytest.mark.parametrize("versions", ["", "TLSv1.2"])
def test_a_client_certificate_is_presented_to_a_server_that_asks_for_one(versions):
    server = TlsRedisServer(ask_clients=True, versions=versions)
    try:
        client = ratelock.Client(
            server.tls_url,
            tls_root_ca=server.ca_pem,
            tls_client_cert=server.client_cert_pem,
            tls_client_key=server.client_key_pem.encode(),
        )
        assert ratelock.Limiter(client).hit(fresh("mtls"), "2/minute").remaining == 1
        with ratelock.DistributedLock(fresh("mtls"), url=client) as lock:
            assert lock.fencing_token is not None and lock.locked()

        async def on_asyncio() -> int:
            connected = await ratelock.asyncio.connect(
                server.tls_url,
                tls_root_ca=server.ca_pem,
                tls_client_cert=server.client_cert_pem,
                tls_client_key=server.client_key_pem,
            )
            return (await ratelock.asyncio.Limiter(connected).hit(fresh("mtls"), "3/minute")).remaining

        assert asyncio.run(on_asyncio()) == 2
    finally:
        server.stop()


def test_a_client_certificate_and_key_that_do_not_go_together_are_named(tls_redis_server):
    certificate, key = tls_redis_server.client_cert_pem, tls_redis_server.client_key_pem
    url = tls_redis_server.tls_url
    for given, named in [
        ({"tls_client_cert": certificate}, "tls_client_key"),
        ({"tls_client_key": key}, "tls_client_cert"),
        ({"tls_client_cert": "not a certificate", "tls_client_key": key}, "tls_client_cert"),
        ({"tls_client_cert": certificate, "tls_client_key": "not a key"}, "tls_client_key"),
    ]:
        with pytest.raises(ratelock.InvalidArgument, match=named):
            ratelock.Client(url, **given)
    with pytest.raises(ratelock.InvalidArgument, match="tls_client_cert"):
        ratelock.Client(tls_redis_server.url, tls_client_cert=certificate, tls_client_key=key)
    # On a URL that reads no TLS option, that comes first, whatever the PEM holds.
    with pytest.raises(ratelock.InvalidArgument, match="tls_client_cert.*rediss://"):
        ratelock.Client(tls_redis_server.url, tls_client_cert="not a certificate", tls_client_key="not a key")
    with pytest.raises(ratelock.InvalidArgument, match="tls_root_ca.*rediss://"):
        ratelock.Client(tls_redis_server.url, tls_root_ca="not a certificate")


def test_rediss_to_a_plain_port_says_the_connect_timed_out_with_nothing_sent(tls_redis_server):
    # redis-server reads a TLS hello on its plain port as the start of a command and waits for its end.
    url = f"rediss://localhost:{tls_redis_server.port}/"
    limiter = ratelock.Limiter(ratelock.Client(url, tls_root_ca=tls_redis_server.ca_pem, timeout=0.3))
    with pytest.raises(ratelock.StoreUnavailable) as raised:
        limiter.hit(fresh("tls"), "2/minute")
    said = str(raised.value)
    assert "connecting timed out after 300 ms; nothing was sent" in said, said
    assert "does this port serve TLS?" in said and "may have run" not in said, said


def test_max_keys_bounds_a_memory_client_and_a_full_store_is_an_outage():
    # The bound is spread over the store's 64 shards (64 keys: one each), so a few hundred new keys fill it.
    limiter = ratelock.Limiter(ratelock.Client(max_keys=64))
    served, refused = [], 0
    for _ in range(300):
        key = fresh("bounded")
        try:
            limiter.hit(key, "10/minute")
            served.append(key)
        except ratelock.StoreUnavailable as error:
            assert "memory store is full" in str(error)
            refused += 1
    assert len(served) <= 64 and refused > 0
    # A key it holds is still served, and its limit is not forgotten.
    assert limiter.hit(served[0], "10/minute").remaining == 8

    allowing = ratelock.Limiter(ratelock.Client(max_keys=64), on_error="allow")
    decisions = [allowing.hit(fresh("bounded"), "10/minute") for _ in range(300)]
    assert all(decisions) and sum(decision.degraded for decision in decisions) >= 300 - 64


def test_when_full_evict_keeps_serving_new_keys():
    limiter = ratelock.Limiter(ratelock.Client(max_keys=64, when_full="evict"))
    for _ in range(300):
        decision = limiter.hit(fresh("evict"), "10/minute")
        assert decision.remaining == 9 and not decision.degraded


@pytest.mark.parametrize("when_full", ["evict", "refuse"])
def test_a_request_of_more_rules_than_a_shard_of_the_bound_holds_is_a_configuration_error(when_full: str) -> None:
    # max_keys 10 over 64 shards leaves one key per shard, and two rules keep two (evicting went on forever).
    limiter = ratelock.Limiter(ratelock.Client(max_keys=10, when_full=when_full), on_error="allow")
    with pytest.raises(ratelock.ConfigurationError, match="raise max_keys to at least 128"):
        limiter.hit(fresh("rules"), "1/second; 10/minute")


def test_a_clients_max_keys_bounds_a_limiters_local_fallback():
    # A stopped server: every call is an outage, which `local` answers from the limiter's own memory.
    server = RedisServer()
    server.stop()
    client = ratelock.Client(server.url, timeout=0.2, max_keys=64)
    limiter = ratelock.Limiter(client, on_error="local")
    served, refused = 0, 0
    for _ in range(300):
        try:
            assert limiter.hit(fresh("fallback"), "10/minute").degraded
            served += 1
        except ratelock.StoreUnavailable as error:
            assert "memory store is full" in str(error)
            refused += 1
    assert served <= 64 and refused > 0


def test_tls_root_ca_is_refused_where_nothing_would_read_it(redis_server, tls_redis_server):
    for url in [redis_server.url, None, "memory://"]:
        with pytest.raises(ratelock.InvalidArgument, match="tls_root_ca.*rediss://"):
            ratelock.Client(url, tls_root_ca=tls_redis_server.ca_pem)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_keys": 0}, "max_keys"),
        ({"when_full": "evict"}, "when_full"),
        ({"max_keys": 10, "when_full": "drop"}, "when_full"),
        ({"max_keys": -1}, "max_keys"),
        ({"tls_root_ca": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}, "tls_root_ca"),
    ],
)
def test_bad_store_options_are_named(arguments, named):
    with pytest.raises(ratelock.InvalidArgument, match=named):
        ratelock.Client(**arguments)
