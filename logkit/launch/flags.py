"""Launch flags as data: the plain parser, the fingerprint rule, the config diff (no SGLang needed).

Contract (plain dicts, a stored ``LaunchConfig`` dumped to JSON, so the run path imports no
pydantic; the table ``logkit/data/launch.toml`` is read once with stdlib tomllib):

* :func:`plain_parse` reads flags as given: ``--tp-size 2`` and ``--tp-size=2`` -> ``{"tp_size": 2}``
  (numbers become ``int`` then ``float``, the one typing rule everywhere a parser is missing), a
  flag followed by another flag or nothing -> ``True``, several values -> a list. Words before the
  first ``--flag`` are skipped.
* :func:`fingerprint` keeps the *chosen* values (the flags given) whose key is a ``[fingerprint]``
  key (every ``*_backend`` plus ``keys``); resolved defaults never are (they live in ``args``).
* :func:`configuration` is a launch's configuration, the one rule every reader applies (capture,
  the pre-launch check, the sweep, the site): every flag the user gave, short spellings by
  SGLang's name (``[fingerprint.aliases]``: ``tp`` -> ``tp_size``), without the run-specific values
  (``[fingerprint] run_specific``); it reads the stored given flags, so older records get the same
  rule. :func:`config_key` is its short hash.
* :func:`workload` is a benchmark's workload (concurrency, dataset, input/output lengths) from a
  metric's labels: figures are compared only at one workload.
* :func:`diff` compares two launch configs like with like (their chosen flags, ``{**non_default,
  **fingerprint}``), and the watched environment variables of both sides as recorded.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["backend_axes", "chosen", "coerce", "config_key", "configuration", "describe", "diff", "diff_note",
           "fingerprint", "ignored", "is_backend", "model_of", "plain_parse", "table", "watched_env", "workload",
           "workload_order", "workload_text"]

DATA = Path(__file__).resolve().parent.parent / "data" / "launch.toml"


@functools.cache
def table() -> dict[str, Any]:
    """The parsed ``logkit/data/launch.toml``."""
    with open(DATA, "rb") as fh:
        return tomllib.load(fh)


def coerce(value: str) -> Any:
    """``"2"`` -> 2, ``"0.8"`` -> 0.8, anything else stays a string."""
    for cast in (int, float):
        with contextlib.suppress(ValueError):
            return cast(value)
    return value


def _is_flag(word: str) -> bool:
    return word.startswith("--") or (word.startswith("-") and len(word) == 2 and word[1].isalpha())


def plain_parse(flags: list[str]) -> dict[str, Any]:
    """The flags as given: ``--tp-size 2`` -> ``{"tp_size": 2}``; a bare flag -> True."""
    out: dict[str, Any] = {}
    key: str | None = None  # the flag whose values the words that follow are
    vals: list[str] = []
    for word in [*flags, "--"]:
        if _is_flag(word):
            if key is not None:
                out[key] = True if not vals else coerce(vals[0]) if len(vals) == 1 else [coerce(v) for v in vals]
            key, vals = None, []
            if word.startswith("--") and word != "--":
                name, eq, value = word[2:].partition("=")
                if eq:
                    out[name.replace("-", "_")] = coerce(value)
                else:
                    key = name.replace("-", "_")
        elif key is not None:
            vals.append(word)
    return out


def is_backend(key: str) -> bool:
    """A backend axis: the key ends with a ``backend_suffixes`` entry."""
    return key.endswith(_suffixes())


@functools.cache
def _suffixes() -> tuple[str, ...]:
    return tuple(table()["fingerprint"]["backend_suffixes"])


@functools.cache
def _ignore_values() -> frozenset[str]:
    return frozenset(str(v).lower() for v in table()["fingerprint"]["ignore_values"])


def fingerprint(given: dict[str, Any]) -> dict[str, Any]:
    """The chosen values that decide which kernels run: backends and ``[fingerprint] keys``, sorted, ``None`` dropped."""
    keys = table()["fingerprint"]["keys"]
    return {k: v for k, v in sorted(given.items()) if v is not None and (is_backend(k) or k in keys)}


def chosen(launch: dict[str, Any] | None) -> dict[str, Any]:
    """What the user chose in a stored launch config: its non-default flags and its fingerprint."""
    if not launch:
        return {}
    return {**(launch.get("non_default") or {}), **(launch.get("fingerprint") or {})}


def configuration(launch: dict[str, Any] | None) -> dict[str, Any]:
    """A stored launch config's configuration: every flag given, by SGLang's names, no run-specific value, sorted."""
    if not launch:
        return {}
    given = chosen(launch)
    if not given and launch.get("parser") == "plain":
        given = dict(launch.get("args") or {})
    rules = table()["fingerprint"]
    aliases, skip = rules.get("aliases") or {}, set(rules.get("run_specific") or [])
    renamed = ((aliases.get(key, key), value) for key, value in given.items())
    out = {key: value for key, value in renamed if value is not None and key not in skip}
    return dict(sorted(out.items()))


_KEY_ENCODE = json.JSONEncoder(sort_keys=True, default=str).encode


def config_key(launch: dict[str, Any] | None, conf: dict[str, Any] | None = None) -> str | None:
    """A short hash of :func:`configuration` (None when nothing was given); ``conf``: that configuration, if at hand."""
    conf = configuration(launch) if conf is None else conf
    return hashlib.sha1(_KEY_ENCODE(conf).encode()).hexdigest()[:10] if conf else None


def workload(labels: dict[str, Any] | None, concurrency: float | None = None) -> tuple[Any, ...]:
    """(concurrency, dataset, input, output length) of a metric's labels (``[workload]``), None if not recorded."""
    labels = labels or {}
    parts: list[Any] = []
    for name, keys in table()["workload"].items():
        # the first recorded (a loop, not a generator: this runs for every metric the index ingests)
        value = None
        for k in keys:
            if labels.get(k) not in (None, ""):
                value = labels[k]
                break
        if name == "concurrency" and value is None:  # only the concurrency was kept
            value = concurrency
        if isinstance(value, str):
            value = coerce(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
        parts.append(value)
    return tuple(parts)


def workload_order(work: tuple[Any, ...]) -> tuple[Any, ...]:
    """A sort key for workloads: by concurrency (not recorded last), then the rest as text."""
    conc = work[0] if work else None
    return (conc is None, conc if isinstance(conc, (int, float)) else 0.0, tuple(str(x) for x in work[1:]))


def workload_text(work: tuple[Any, ...]) -> str:
    """``concurrency 1, random 1024/1024`` or ``workload not recorded``."""
    conc, dataset, inp, outp = (tuple(work) + (None,) * 4)[:4]
    parts = [f"concurrency {conc:g}" if isinstance(conc, float) else (f"concurrency {conc}" if conc else "")]
    if dataset:
        parts.append(str(dataset))
    if inp is not None or outp is not None:
        parts.append(f"in/out {'?' if inp is None else f'{inp:g}'}/{'?' if outp is None else f'{outp:g}'}")
    return ", ".join(p for p in parts if p) or "workload not recorded"


def ignored(value: Any) -> bool:
    """A value that chooses nothing (``auto``, ``none``, empty: ``[fingerprint] ignore_values``)."""
    return value is None or str(value).strip().lower() in _ignore_values()


def backend_axes(launch: dict[str, Any] | None, resolved: dict[str, Any] | None = None) -> dict[str, str]:
    """The backend values a launch chose, and for one left ``auto`` what ``resolved`` (``/server_info``) says."""
    # never auto/none, nor SGLang's default (in args, not in non_default)
    launch = launch or {}
    fp = launch.get("fingerprint") or {}
    args, nd = launch.get("args") or {}, launch.get("non_default") or {}
    out = {k: str(v) for k, v in fp.items() if is_backend(k) and not ignored(v) and (k not in args or k in nd)}
    for key, value in (resolved or {}).items():
        if is_backend(key) and key not in out and isinstance(value, str) and not ignored(value) \
                and ignored(fp.get(key, args.get(key, "auto"))):  # left to SGLang: the server says what it picked
            out[key] = value
    return dict(sorted(out.items()))


def model_of(launch: dict[str, Any] | None) -> str | None:
    """The model a launch serves (first of ``[fingerprint] model_keys`` found)."""
    if not launch:
        return None
    for key in table()["fingerprint"]["model_keys"]:
        for part in ("fingerprint", "non_default", "args"):
            value = (launch.get(part) or {}).get(key)
            if value:
                return str(value)
    return None


def describe(values: dict[str, Any]) -> str:
    """``{"moe_runner_backend": "flashinfer_trtllm"}`` -> ``flashinfer_trtllm MoE``."""
    labels = table()["fingerprint"]["labels"]
    return " + ".join(f"{v} {labels[k]}" if k in labels else f"--{k.replace('_', '-')} {v}" for k, v in values.items())


def watched_env(env: dict[str, Any] | None) -> dict[str, Any]:
    """The recorded variables a diff compares (``[diff] env_prefixes``)."""
    prefixes = tuple(table()["diff"]["env_prefixes"])
    return {k: v for k, v in (env or {}).items() if k.startswith(prefixes)}


def diff(new: dict[str, Any], previous: dict[str, Any] | None, env: dict[str, Any] | None = None,
         packages: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A ``ConfigDiff`` dict of launch config ``new`` against attempt dict ``previous``; ``env``: the new side's."""
    if not previous or not previous.get("launch"):
        return None
    old, cur = configuration(previous["launch"]), configuration(new)  # run-specific values (a port) are no change
    out: dict[str, Any] = {
        "against": previous.get("short_id"),
        "added": {k: v for k, v in cur.items() if k not in old},
        "removed": {k: v for k, v in old.items() if k not in cur},
        "changed": {k: [old[k], v] for k, v in cur.items() if k in old and old[k] != v},
        "env_changed": {},
        "packages_changed": {},
    }
    prev_env = previous.get("environment") or {}
    if prev_env and env is not None:
        a, b = watched_env(prev_env.get("env")), watched_env(env)
        out["env_changed"] = {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
    if prev_env and packages is not None:
        # Only packages the previous attempt recorded: its probe and ours may list different sets.
        old_pk = prev_env.get("packages") or {}
        out["packages_changed"] = {k: [old_pk[k], packages[k]] for k in sorted(old_pk)
                                   if k in packages and old_pk[k] != packages[k]}
    return out


def diff_note(d: dict[str, Any], redactor: Any = None) -> str:
    """``vs A7: nsa_decode_backend flashinfer -> trtllm``; ``redactor`` hides secrets (stderr is often captured)."""
    secret = redactor.is_secret_key if redactor is not None else (lambda _k: False)
    hidden = redactor.placeholder if redactor is not None else ""
    parts = [f"{k} changed" if secret(k) else f"{k} {a} -> {b}" for k, (a, b) in d["changed"].items()]
    parts += [f"+{k}={hidden if secret(k) else v}" for k, v in d["added"].items()]
    parts += [f"-{k}" for k in d["removed"]]
    parts += [f"env {k} changed" if secret(k) else f"env {k} {a} -> {b}" for k, (a, b) in d["env_changed"].items()]
    parts += [f"{k} {a} -> {b}" for k, (a, b) in d["packages_changed"].items()]
    line = f"vs {d['against']}: " + (", ".join(parts) if parts else "same flags")
    return redactor.text(line) if redactor is not None else line
