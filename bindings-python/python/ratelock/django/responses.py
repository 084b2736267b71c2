"""Checks a request against one limit, sync or async, and turns the core's answer into Django's response:
the refusal itself, or the headers added to the view's own response."""

from typing import Optional

from django.http import HttpRequest, HttpResponse, HttpResponseBase

from ratelock.http import Checked, HttpAnswer, HttpLimiter, Limit
from ratelock.django.conf import peer_and_forwarded


def check(http: HttpLimiter, limit: Limit, request: HttpRequest) -> Checked:
    peer, forwarded = peer_and_forwarded(http, request)
    return remember(request, http.check(limit, request, peer=peer, forwarded=forwarded))


async def check_async(http: HttpLimiter, limit: Limit, request: HttpRequest) -> Checked:
    peer, forwarded = peer_and_forwarded(http, request)
    return remember(request, await http.check_async(limit, request, peer=peer, forwarded=forwarded))


def remember(request: HttpRequest, checked: Checked) -> Checked:
    """Keeps the decision on the request (``request.rate_limit``) for the view to read."""
    if checked.decision is not None:
        setattr(request, "rate_limit", checked.decision)
    return checked


def refusal(answer: HttpAnswer) -> HttpResponse:
    """The response of a refusal (a denial, an outage's 503, an unusable key's 400)."""
    response = HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
    for name, value in answer.headers:
        response[name] = value
    return response


def refusal_of(checked: Checked) -> Optional[HttpResponse]:
    return None if checked.answer is None or checked.answer.proceed else refusal(checked.answer)


def add_headers(checked: Optional[Checked], response: HttpResponseBase) -> HttpResponseBase:
    if checked is not None and checked.answer is not None and checked.answer.proceed:
        for name, value in checked.answer.headers:
            response[name] = value
    return response
