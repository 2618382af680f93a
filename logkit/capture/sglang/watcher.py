"""Watchers for SGLang attempts: classify while streaming, readiness by log AND HTTP, server info,
hang detection, smoke prompts and the accuracy gate (launches); metric events (benchmarks).

Contract: :meth:`LaunchWatcher.feed` only scans bytes (classifier + timeline). Everything that
waits on the network runs in one daemon thread: it polls ``/ready`` (``/health`` on old versions),
emits a redacted ``ServerInfo``, sends the ``--smoke`` prompts (a degenerate reply: ``garbage``), runs
``--accuracy`` (:mod:`.accuracy`; below the threshold: ``inaccurate``), and with ``--smoke-only``
asks the runner to stop. :meth:`tick` detects a hang (no output for ``hang_timeout`` before ready, or
``/ready`` silent that long after the server listens). :class:`BenchWatcher` closes the benchmark's
output FIFO (:mod:`.fifo`) when the client ends and reads the redacted record (a ``--warmup`` run
records no figures). A failure inside a thread is recorded in a note, never raised.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ... import statuses
from ...events import AttemptLaunch, BenchConfig, LaunchConfig, Metric, Milestone, Note, ServerInfo, Smoke
from ...launch.config import from_full, printed_args, printed_config, valid_port
from ...launch.flags import fingerprint
from ...launch.sglang import Background
from ..hooks import ExitInfo, WatchContext, WatchResult
from .bench import BenchResult, parse_file, parse_text, redact_info
from .fifo import FifoSink
from .outcomes import Classifier
from .smoke import degenerate, send
from .timeline import Timeline

__all__ = ["BenchWatcher", "LaunchWatcher", "http_ready", "probe_url"]

POLL_S = 1.0
#: How long the end of a launch waits for SGLang's full parse: not at all (a dead launch must not hold
#: the terminal); it is cancelled with a note, the cached spec's parse stands.
PARSE_WAIT_S = 0.0
#: ... and for the ``launch_config`` of the flags the server printed: the first build of the parser spec.
PRINTED_WAIT_S = 10.0


def probe_url(host: str | None, port: int | None) -> str | None:
    """``http://host:port`` for talking to a server that listens on ``host`` (0.0.0.0 -> loopback)."""
    if port is None:
        return None
    return f"http://{'127.0.0.1' if host in (None, '0.0.0.0', '::', '[::]', '') else host}:{port}"


def _get(url: str, timeout: float = 3.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - the server's own address
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except Exception:  # noqa: BLE001 - not up yet
        return 0, b""


def http_ready(base: str, timeout: float = 3.0) -> bool:
    """Whether the server at ``base`` answers ``/ready`` with 200 (``/health`` on versions without it)."""
    code, _ = _get(f"{base}/ready", timeout)
    if code == 404:
        code, _ = _get(f"{base}/health", timeout)
    return code == 200


def _note(ctx: WatchContext | None, text: str) -> None:
    """A note about the attempt (a problem of logkit's own probes); never raises into the recording."""
    if ctx is None:
        return
    with contextlib.suppress(Exception):
        ctx.emit(Note(session=ctx.attempt.session, text=text, refs=[ctx.attempt.short_id]))


#: signature -> status of what logkit's own probes find once a server is ready, which its log cannot show
PROBE_FINDINGS = {"logkit-smoke": "garbage", "logkit-accuracy": "inaccurate"}


class LaunchWatcher:
    """Watches one SGLang server launch."""

    def __init__(self, launch: dict[str, Any] | None, background: Background | None = None, *,
                 latent: bool = False, printed: bool = False, classifier: Classifier | None = None) -> None:
        self.launch = launch
        #: a command its argv does not show to be a launch: one once its output shows an SGLang server
        self.latent = latent
        #: a launch whose flags are read from the server_args line it prints (promoted, --role launch, docker)
        self.promoted = printed
        self._printing = []
        self._printed_texts: set[str | None] = set()  # the server_args texts whose launch_config is emitted
        self._printed_lock = threading.Lock()
        self.background = background  # SGLang's full parse running beside the launch
        self._parse_thread: threading.Thread | None = None
        self.clf = classifier if classifier is not None else Classifier()  # a latent watcher's, handed over
        self.timeline = Timeline()
        self.base = probe_url(launch.get("host") if launch else None, launch.get("port") if launch else None)
        self.ctx: WatchContext | None = None
        self.last_output = time.monotonic()
        self.http_ready_at: datetime | None = None
        self.log_ready_at: datetime | None = None
        self.hang: str | None = None
        self.listening_at: float | None = None
        self.garbage: str | None = None
        self.inaccurate: str | None = None  # the accuracy gate's verdict when it failed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        args = (launch or {}).get("args") or {}
        self.api_key = str(args["api_key"]) if args.get("api_key") else None

    def started(self, ctx: WatchContext) -> None:
        self.ctx = ctx
        self.last_output = time.monotonic()
        if self.latent and ctx.record.get("role") == "launch" and self.clf.server_line is None:
            self.latent = False  # --role launch: a launch, its flags read from its output when it prints them
            self.promoted = True
        if self.base:
            self._start_network()
        if self.background is not None:
            self._parse_thread = threading.Thread(target=self._full_parse, name="logkit-sglang-parse", daemon=True)
            self._parse_thread.start()

    def _full_parse(self) -> None:
        """Record SGLang's full parse (``launch_config``): its args, or a refusal the cached spec could not see."""
        assert self.ctx is not None and self.background is not None
        try:
            result = self.background.result()
            if result is None:
                return
            launch = self.launch or {}
            cfg = from_full(result, [], None) if result.get("ok") else None
            if cfg is not None:
                # The attempt's fingerprint and diff stand (one rule, typed by the spec); the args are SGLang's.
                cfg.update({k: launch[k] for k in ("fingerprint", "diff", "host", "port") if k in launch})
            self.ctx.emit(AttemptLaunch(session=self.ctx.attempt.session, attempt=self.ctx.attempt.short_id,
                                        launch=LaunchConfig.model_validate(cfg) if cfg else None,
                                        error=None if result.get("ok") else result.get("error")))
        except Exception as exc:  # noqa: BLE001 - never kill the recording
            _note(self.ctx, f"sglang full parse: {type(exc).__name__}: {exc}")

    def feed(self, chunk: bytes, first_line: int, classified: bool = False) -> None:
        """``classified``: the classifier has seen this chunk already (the one that made a command a launch)."""
        self.last_output = time.monotonic()
        was_ready = self.clf.ready and not classified
        if not classified:
            self.clf.feed(chunk, first_line)
        if (self.latent or self.promoted) and self.clf.server_line is not None and not self._printed:
            self._promote()
        self.timeline.feed(chunk, first_line, datetime.now(UTC))
        if self.listening_at is None and any(m.stage == "http_listening" for m in self.timeline.milestones):
            self.listening_at = time.monotonic()
        if self.clf.ready and not was_ready:
            self.log_ready_at = datetime.now(UTC)

    _printed = False
    _printing: list[tuple[threading.Thread, str | None]]

    def _start_network(self) -> None:
        self._thread = threading.Thread(target=self._network, name="logkit-sglang", daemon=True)
        self._thread.start()

    def _promote(self) -> None:
        """The output shows an SGLang server: a launch, its flags read from its ``server_args`` line once seen."""
        if self.ctx is None:
            return
        if self.clf.server_args is None and not self.latent:
            return  # already a launch (--role launch): wait for the flags
        first = self.latent
        self.latent, self.promoted = False, True
        text = self.clf.server_args
        if text is not None:
            self._printed = True
            args = printed_args(text) or {}
            if self.launch is None:
                self.launch = {"host": args.get("host"), "port": valid_port(args.get("port"))}
                self.base = probe_url(self.launch["host"], self.launch["port"])
                key = args.get("api_key")
                self.api_key = str(key) if key and "*" not in str(key) and "REDACTED" not in str(key) else None
                if self.base and self._thread is None:
                    self._start_network()
        if first or text is not None:
            t = threading.Thread(target=self._record_printed, args=(text,), name="logkit-sglang-printed", daemon=True)
            self._printing.append((t, text))
            t.start()

    def _record_printed(self, text: str | None, *, defaults: bool = True) -> None:
        """Emit the ``launch_config`` of an attempt its output made a launch (off the hot path), once per text."""
        assert self.ctx is not None
        try:
            cfg = printed_config(text, defaults=defaults) if text is not None else None
            with self._printed_lock:
                if text in self._printed_texts:
                    return
                self._printed_texts.add(text)
            self.ctx.emit(AttemptLaunch(session=self.ctx.attempt.session, attempt=self.ctx.attempt.short_id,
                                        launch=LaunchConfig.model_validate(cfg) if cfg else None, role="launch"))
        except Exception as exc:  # noqa: BLE001 - never kill the recording
            _note(self.ctx, f"sglang printed server_args: {type(exc).__name__}: {exc}")

    def tick(self, now: float) -> None:
        if self.ctx is None or self.hang or self.ready or self.latent:
            return
        limit = self.ctx.options.get("hang_timeout")
        if not limit:
            return
        if now - self.last_output > limit:
            self.hang = f"no output for {limit:g}s before ready"
        elif self.listening_at is not None and now - self.listening_at > limit:
            # The log says the HTTP server is up, yet /ready has not answered 200 for that long.
            self.hang = f"ready endpoint not answering {limit:g}s after the server started listening"
        if self.hang:
            self.ctx.request_stop(self.hang + " (--hang-timeout)")

    @property
    def ready(self) -> bool:
        return self.clf.ready or self.http_ready_at is not None

    def _network(self) -> None:
        assert self.ctx is not None and self.base is not None
        try:
            while not self._stop.is_set() and self.http_ready_at is None:
                if http_ready(self.base):
                    self.http_ready_at = datetime.now(UTC)
                    break
                self._stop.wait(POLL_S)
            if self._stop.is_set():
                return
            self._server_info()
            prompts = list(self.ctx.options.get("smoke") or [])
            for prompt in prompts:
                self._smoke(prompt)
            gate = self.ctx.options.get("accuracy")
            if gate is not None and not self.garbage:
                self._accuracy(float(gate))
            if (prompts or gate is not None) and self.ctx.options.get("smoke_only"):
                self.ctx.request_stop("smoke test done (--smoke-only)")
        except Exception as exc:  # noqa: BLE001 - never kill the recording
            self.hang = None
            _note(self.ctx, f"sglang watcher: {exc}")

    def _server_info(self) -> None:
        assert self.ctx is not None
        for path in ("/server_info", "/get_server_info"):
            code, body = _get(f"{self.base}{path}")
            if code == 200 and body:
                try:
                    info = redact_info(json.loads(body))
                except ValueError:
                    continue
                flat = {k: v for k, v in info.items() if k not in ("internal_states",)}
                self.ctx.emit(ServerInfo(session=self.ctx.attempt.session, attempt=self.ctx.attempt.short_id,
                                         version=info.get("version"), endpoint=path, resolved=flat,
                                         fingerprint=fingerprint(flat)))
                return

    def _model(self) -> str:
        """The served model's name (``/v1/models``), else ``default``."""
        code, body = _get(f"{self.base}/v1/models")
        if code == 200:
            with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
                return str(json.loads(body)["data"][0]["id"])
        return "default"

    def _accuracy(self, threshold: float) -> None:
        """The accuracy gate: the score a metric, the wrong answers a note, below ``threshold`` ``inaccurate``."""
        assert self.ctx is not None and self.base is not None
        from .accuracy import check

        r = check(self.base, model=self._model(), api_key=self.api_key, threshold=threshold)
        me = self.ctx.attempt.short_id
        self.ctx.emit(Metric(session=self.ctx.attempt.session, name="accuracy", value=round(r.score, 4), attempt=me,
                             server_attempt=me, labels={"questions": r.total, "wrong": len(r.wrong),
                                                        "threshold": r.threshold, "set": "logkit-accuracy"}))
        if r.wrong:
            shown = "; ".join(f"{q!r}: expected {want!r}, got {got!r}" for q, want, got in r.wrong[:12])
            more = f" (and {len(r.wrong) - 12} more)" if len(r.wrong) > 12 else ""
            _note(self.ctx, f"{r.label()}: {shown}{more}")
        if not r.passed:
            self.inaccurate = r.label()

    def _smoke(self, prompt: str) -> None:
        assert self.ctx is not None and self.base is not None
        r = send(self.base, prompt, model=self._model(), api_key=self.api_key)
        why = r.error or degenerate(r.reply, r.logprobs)
        if why and not r.error:
            self.garbage = self.garbage or why
        self.ctx.emit(Smoke(session=self.ctx.attempt.session, attempt=self.ctx.attempt.short_id, prompt=prompt,
                            reply=r.reply, latency_s=r.latency_s, ok=why is None, reason=why))

    def finished(self, exit_info: ExitInfo) -> WatchResult:
        self._stop.set()
        for t, text in self._printing:  # the printed flags' launch_config goes before the outcome
            t.join(timeout=PRINTED_WAIT_S)
            if t.is_alive():  # SGLang's defaults still being read (a cold spec cache on a busy host): keep the flags
                self._record_printed(text, defaults=False)
                _note(self.ctx, f"SGLang's defaults were not read within {PRINTED_WAIT_S:.0f}s of the launch's end: "
                                "its printed flags are recorded unresolved (every printed field kept)")
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._parse_thread is not None:
            # The parse started with the launch (a few seconds); a command that died at once waits for it.
            self._parse_thread.join(timeout=PARSE_WAIT_S)
            if self._parse_thread.is_alive() and self.background is not None:
                self.background.cancel()
                _note(self.ctx, "SGLang's full parse of the flags was still running when the launch ended: cancelled, "
                        "not recorded (the flags as logkit's cached spec parsed them stand)")
        d = self.clf.decide(exit_code=exit_info.exit_code, signal=exit_info.signal,
                            stopped_by_logkit=exit_info.stopped_by_logkit, http_ready=self.http_ready_at is not None,
                            hang=self.hang, launch=not self.latent)
        if self.latent and d.signature is None:
            return WatchResult()  # a plain command nothing in its output explains: the runner's exit answer
        status, label, sig = d.status, d.label, d.signature
        # A degenerate reply, then wrong answers, are the finding unless the run failed in its own right (a
        # status of class failure): a server stopped or killed after replying garbage is garbage.
        for probe, finding in (("logkit-smoke", self.garbage and f"degenerate smoke reply: {self.garbage}"),
                               ("logkit-accuracy", self.inaccurate)):
            if finding and statuses.row(status).klass != "failure":
                sig, label, status = probe, finding, PROBE_FINDINGS[probe]
        ready_at = self.log_ready_at or self.http_ready_at
        if ready_at is None:
            ready_at = next((m.at for m in self.timeline.milestones if m.stage == "ready"), None)
        started = self.ctx.attempt.started if self.ctx else None
        timeline = self.timeline.with_seconds(started)
        if self.http_ready_at is not None and not self.clf.ready:
            secs = round((self.http_ready_at - started).total_seconds(), 3) if started else None
            timeline.append(Milestone(stage="ready", at=self.http_ready_at, seconds=secs, detail={"via": "HTTP /ready"}))
        return WatchResult(status=status, label=label, signature=sig, evidence=d.evidence,  # the ready line in it
                       timeline=timeline, ready_at=ready_at if d.ready else None)


class BenchWatcher:
    """Watches one SGLang benchmark client run; emits one Metric per figure when it ends."""

    def __init__(self, bench: BenchConfig, output_file: str | None, server_attempt: str | None,
                 owned: bool = False, sink: FifoSink | None = None, fallback: str | None = None,
                 measure: bool = True, repeat: str | None = None) -> None:
        self.bench = bench
        self.measure = measure  # False for a warm-up run: its figures are not recorded
        self.repeat = repeat  # ``i/N`` of ``--repeat N``, a label on each metric
        self.output_file = output_file
        #: logkit chose the output file: with ``sink`` only redacted records reach it; without (no FIFO,
        #: ``fallback`` says why) it is redacted in place when the client exits
        self.owned = owned
        self.sink = sink
        self.fallback = fallback
        self.server_attempt = server_attempt
        self.clf = Classifier()
        self.ctx: WatchContext | None = None
        self._tail: list[bytes] = []
        self._size = 0

    def started(self, ctx: WatchContext) -> None:
        self.ctx = ctx
        if self.fallback:
            _note(self.ctx, self.fallback)
        elif self.sink is not None and self.sink.tmpdir is not None:
            _note(self.ctx, f"bench output FIFO in a {self.sink.where}")

    def feed(self, chunk: bytes, first_line: int) -> None:
        self.clf.feed(chunk, first_line)
        if b"Serving Benchmark Result" in chunk or self._tail:
            self._tail.append(chunk)
            self._size += len(chunk)
            while self._size > (256 << 10) and len(self._tail) > 1:
                self._size -= len(self._tail.pop(0))

    def tick(self, now: float) -> None:
        return None

    def _result(self) -> BenchResult | None:
        if self.output_file and Path(self.output_file).is_file():
            with contextlib.suppress(Exception):  # fall back to the printed block
                return parse_file(self.output_file)
        with contextlib.suppress(ValueError):  # no tail, or no figures in it
            return parse_text(b"".join(self._tail).decode("utf-8", "replace"))
        return None

    def _redact_output(self) -> None:
        """No FIFO possible: the client wrote /server_info (api_key, admin_api_key) in clear; scrub it now."""
        if not (self.owned and self.output_file and Path(self.output_file).is_file()):
            return
        path = Path(self.output_file)
        lines = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                lines.append(line)
                continue
            lines.append(json.dumps(redact_info(rec), ensure_ascii=False))
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(path)

    def finished(self, exit_info: ExitInfo) -> WatchResult:
        if self.sink is not None:
            self.sink.close()
            for problem in self.sink.problems:
                _note(self.ctx, problem)
        else:
            with contextlib.suppress(OSError):
                self._redact_output()
        result = self._result()
        if result is not None and self.ctx is not None and self.measure:
            labels = {**self.bench.labels, **result.labels, **({"repeat": self.repeat} if self.repeat else {})}
            for name, value in result.metrics.items():
                self.ctx.emit(Metric(session=self.ctx.attempt.session, name=name, value=value, unit=result.unit(name),
                                     attempt=self.ctx.attempt.short_id, server_attempt=self.server_attempt,
                                     labels=labels))
        d = self.clf.decide(exit_code=exit_info.exit_code, signal=exit_info.signal,
                            stopped_by_logkit=exit_info.stopped_by_logkit)
        label = d.label
        if d.status == "exit_ok" and result is not None:
            label = (f"{len(result.metrics)} metrics from the {result.source} result" if self.measure else
                     f"warm-up: its {len(result.metrics)} figures not recorded")
        return WatchResult(status=d.status, label=label, signature=d.signature, evidence=d.evidence)
