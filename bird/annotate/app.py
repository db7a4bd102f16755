"""The rating web app (Starlette): one page per rater link, a JSON API, clips served by schedule position.

Safety: a clip's file path only ever comes from the database (the URL names a schedule position, never a path), and
a clip that is a link or lies outside its run directory is not served; every route but the static assets needs a
valid rater token; an answer's body is capped while it is read, a state-changing request from another origin is
refused, answers are validated (bird/annotate/study.py); responses carry a strict Content-Security-Policy and no
Referer leaves the page (the token is in the URL).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from bird.annotate.study import QUESTIONS, AnswerError, Rater, Study

__all__ = ["make_app"]

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_MAX_BODY = 4096
_STATIC = {"rate.js": "text/javascript", "rate.css": "text/css"}
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
                               "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def _static(name: str) -> str:
    return resources.files("bird.annotate").joinpath("static", name).read_text(encoding="utf-8")


def _secure(resp: Response, cache: bool = False) -> Response:
    resp.headers.update(_HEADERS)
    resp.headers["Cache-Control"] = "private, max-age=3600" if cache else "no-store"
    return resp


def _error(status: int, message: str) -> Response:
    return _secure(JSONResponse({"error": message}, status_code=status))


def _same_origin(request: Request) -> bool:
    """The request comes from this app's own page: its Origin (sent by browsers on every POST) names this host, or,
    without one (a non-browser client), Sec-Fetch-Site does not say another site sent it."""
    origin = request.headers.get("origin")
    if origin is None:
        return request.headers.get("sec-fetch-site") in (None, "same-origin", "none")
    return urlsplit(origin).netloc == request.headers.get("host", "")


async def _capped_body(request: Request) -> bytes | None:
    """The request body, or None as soon as it exceeds _MAX_BODY (declared or received): never read whole."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > _MAX_BODY):
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class _Endpoints:
    """The route handlers, bound to one study."""

    def __init__(self, study: Study) -> None:
        self.study = study

    def rater_of(self, request: Request) -> Rater | None:
        token = request.path_params.get("token", "")
        return self.study.rater_by_token(token) if _TOKEN.match(token) else None

    def state(self, rater: Rater) -> dict[str, Any]:
        prog = self.study.progress(rater)
        item = prog["next"]
        if item is not None:
            item = {"position": item["position"], "task": item["task"], "suite": item["suite"],
                    "description": item["description"], "ask_naturalness": item["ask_naturalness"],
                    "clip_url": f"clip/{item['position']}"}
        return {"rater": rater.name, "total": prog["total"], "answered": prog["answered"], "item": item,
                "done": item is None, "scale": self.study.scale_points, "questions": QUESTIONS}

    def index(self, request: Request) -> Response:
        return _secure(PlainTextResponse("This rating study needs your personal link (…/r/<token>/).", 404))

    def redirect(self, request: Request) -> Response:
        return _secure(RedirectResponse(f"/r/{request.path_params['token']}/"))

    def page(self, request: Request) -> Response:
        if self.rater_of(request) is None:
            return _secure(PlainTextResponse("Unknown or missing rater token.", 404))
        return _secure(HTMLResponse(_static("rate.html")))

    def api_state(self, request: Request) -> Response:
        rater = self.rater_of(request)
        if rater is None:
            return _error(404, "unknown or missing rater token")
        return _secure(JSONResponse(self.state(rater)))

    async def api_answer(self, request: Request) -> Response:
        rater = self.rater_of(request)
        if rater is None:
            return _error(404, "unknown or missing rater token")
        if not _same_origin(request):
            return _error(403, "the answer comes from another site's page")
        body = await _capped_body(request)
        if body is None:
            return _error(413, "answer too large")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return _error(422, "the answer is not valid JSON")
        try:
            self.study.answer(rater, payload)
        except AnswerError as exc:
            return _error(exc.status, str(exc))
        return _secure(JSONResponse(self.state(rater)))

    def clip(self, request: Request) -> Response:
        rater = self.rater_of(request)
        position = request.path_params["position"]
        path = self.study.clip_path(rater, int(position)) if rater and position.isdigit() and len(position) < 8 else None
        if path is None:
            return _error(404, "no such clip")
        return _secure(FileResponse(path, media_type="video/mp4"), cache=True)

    def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _secure(PlainTextResponse("not found", 404))
        return _secure(Response(_static(name), media_type=_STATIC[name]), cache=True)


def make_app(study: Study) -> Starlette:
    """The ASGI app serving `study`."""
    e = _Endpoints(study)
    return Starlette(routes=[
        Route("/", e.index),
        Route("/static/{name}", e.static),
        Route("/r/{token}", e.redirect),
        Route("/r/{token}/", e.page),
        Route("/r/{token}/api/state", e.api_state),
        Route("/r/{token}/api/answer", e.api_answer, methods=["POST"]),
        Route("/r/{token}/clip/{position}", e.clip),
    ])
