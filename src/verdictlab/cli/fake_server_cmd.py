"""`verdictlab fake-server [--port P] [--host H]` -- the local OpenAI-compatible server of
:mod:`verdictlab.testing.fake_openai` in the foreground, to try an API judge without an account: it
answers every chat completion in the format the prompt asks for, with a seeded verdict."""

from __future__ import annotations

import errno
from enum import StrEnum
from typing import Annotated

import typer

from ._errors import EXIT_INTERRUPTED, EXIT_TERMINATED
from .options import SEED_DEFAULT, exit_codes, seed_option

DEFAULT_PORT = 8399
DEFAULT_KEY = "sk-fake-local"


class WinnerPolicy(StrEnum):
    """Which shown response the fake judge prefers (``testing.fake_openai.WINNER_POLICIES``)."""

    seeded = "seeded"
    first = "first"
    second = "second"
    longer = "longer"
    shorter = "shorter"


def fake_server(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")
                    ] = DEFAULT_PORT,
    host: Annotated[str, typer.Option(help="Address to listen on; the default serves this machine only.")
                    ] = "127.0.0.1",
    api_key: Annotated[str, typer.Option(
        "--api-key", metavar="KEY",
        help="The key clients must send (a made-up one: set it in VERDICTLAB_API_KEY, or in the variable a "
             "judge id names with #key_env=).")] = DEFAULT_KEY,
    latency: Annotated[float, typer.Option(min=0.0, metavar="SECONDS", help="Latency of every answer.")] = 0.0,
    winner: Annotated[WinnerPolicy, typer.Option(
        case_sensitive=False, help="Which shown response wins: seeded (the first shown with probability "
                                   "--p-first), first, second, longer or shorter.")] = WinnerPolicy.seeded,
    p_first: Annotated[float, typer.Option("--p-first", min=0.0, max=1.0, metavar="P",
                                           help="With --winner seeded: chance the first shown wins.")] = 0.5,
    p_rate_limit: Annotated[float, typer.Option(
        "--p-rate-limit", min=0.0, max=1.0, metavar="P",
        help="Chance a request is answered 429 (rate limit) to watch the retries.")] = 0.0,
    seed: Annotated[int, seed_option(
        "the fake judge's verdicts and faults (the same seed and prompts, the same answers)")] = SEED_DEFAULT,
) -> None:
    """Serve a fake OpenAI-compatible chat-completions API in the foreground, to audit a judge with no
    account: judge id openai-compatible:fake-judge@BASE_URL (any model name).  Prints BASE_URL on stdout
    once listening; Ctrl-C stops it.  A request without the key gets HTTP 401, like a real provider."""
    from ..testing.fake_openai import FakeConfig, serve_forever
    from ._errors import say

    config = FakeConfig(api_key=api_key, latency_s=latency, winner_policy=winner.value, p_first=p_first,
                        p_rate_limit=p_rate_limit, seed=seed)

    def ready(url: str) -> None:
        typer.echo(url)
        key = repr(DEFAULT_KEY) if api_key == DEFAULT_KEY else "the one given with --api-key"
        say(f"fake OpenAI-compatible server at {url} (key {key}; judge id "
            f"openai-compatible:fake-judge@{url}); press Ctrl-C to stop")

    try:
        serve_forever(config, host=host, port=port, on_ready=ready)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise typer.BadParameter(f"{host}:{port}: in use; choose another --port (0 picks a free one)",
                                     param_hint="'--port'") from None
        raise typer.BadParameter(f"{host}: cannot listen there ({exc.strerror or exc})",
                                 param_hint="'--host'") from None
    except KeyboardInterrupt as exc:      # Ctrl-C 130; SIGTERM (verdictlab.stopping.Stopped) 143
        say("fake server stopped")
        raise typer.Exit(getattr(exc, "exit_code", EXIT_INTERRUPTED)) from None


def register(app: typer.Typer) -> None:
    app.command("fake-server", epilog=exit_codes(EXIT_INTERRUPTED, EXIT_TERMINATED))(fake_server)
