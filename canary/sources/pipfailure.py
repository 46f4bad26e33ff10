"""What a failed ``pip download`` means, read from pip's own output.

pip ends both "the index never answered" and "the index has no such version" with the
same last line (``No matching distribution found``); the difference is in the lines
before it: the warnings of its retries (``connection broken by ... Connection refused``)
and the versions it did see (``from versions: none`` when it saw none at all). Telling
them apart decides what canary says and whether trying the next release is worth it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNREACHABLE = "unreachable"  # no answer from the index: the next release will not fare better
NO_RELEASES = "no releases"  # the index answered but lists nothing of the package at all
NOT_FOUND = "not found"  # the index lists the package, but not this version
NO_SPACE = "no space"  # the disk pip downloads to is full: no release will fare better
CONSTRAINED = "constrained"  # a constraint in pip's configuration rules the version out
OTHER = "other"
_NO_SPACE = re.compile(r"No space left on device|\[Errno 28\]|ENOSPC", re.IGNORECASE)

# Most specific first: a refused connection also says "connection broken by".
_NETWORK = (
    ("connection refused", re.compile(r"Connection refused|ECONNREFUSED", re.IGNORECASE)),
    (
        "DNS lookup failed",
        re.compile(
            r"Name or service not known|Temporary failure in name resolution|"
            r"nodename nor servname|getaddrinfo failed|Failed to resolve|"
            r"No address associated with hostname",
            re.IGNORECASE,
        ),
    ),
    ("TLS error", re.compile(r"CERTIFICATE_VERIFY_FAILED|SSLError|\bSSL:", re.IGNORECASE)),
    ("proxy error", re.compile(r"ProxyError|Tunnel connection failed", re.IGNORECASE)),
    ("timed out", re.compile(r"timed out|ConnectTimeout|ReadTimeout", re.IGNORECASE)),
    (
        "network unreachable",
        re.compile(r"Network is unreachable|No route to host", re.IGNORECASE),
    ),
    (
        "connection failed",
        re.compile(
            r"connection broken by|Connection reset|RemoteDisconnected|connection error",
            re.IGNORECASE,
        ),
    ),
)
_NOT_ON_INDEX = re.compile(
    r"No matching distribution found|Could not find a version that satisfies", re.IGNORECASE
)
_NO_VERSIONS = re.compile(r"\(from versions: none\)", re.IGNORECASE)
# One requirement downloaded without its dependencies conflicts only with a constraint, the
# user's own (``global.constraint``, ``PIP_CONSTRAINT``); pip names it where not --quiet
_CONFLICT = re.compile(r"Cannot install (\S+) because these package versions have conflicting")
_CONSTRAINT = re.compile(r"The user requested \(constraint\) (\S+)")


_EVIDENCE_LIMIT = 200  # characters of pip's line kept as evidence


@dataclass(frozen=True)
class PipFailure:
    kind: str  # one of UNREACHABLE, NO_RELEASES, NOT_FOUND, NO_SPACE, CONSTRAINED, OTHER
    reason: str  # pip's reason in a few words: "connection refused"
    evidence: str = ""  # the line of pip's output that says so (network failures)


def classify(output: str) -> PipFailure:
    """The kind of failure pip's combined output describes."""
    if match := _NO_SPACE.search(output):
        return PipFailure(NO_SPACE, "no space left on device", _line_around(output, match))
    for reason, pattern in _NETWORK:
        if match := pattern.search(output):
            return PipFailure(UNREACHABLE, reason, _line_around(output, match))
    if match := _CONSTRAINT.search(output) or _CONFLICT.search(output):
        says = "allows only" if match.re is _CONSTRAINT else "rules out"
        return PipFailure(CONSTRAINED, f"a constraint {says} {match.group(1)}", match[0])
    if _NOT_ON_INDEX.search(output):
        if _NO_VERSIONS.search(output):
            return PipFailure(NO_RELEASES, "no version of the package listed")
        return PipFailure(NOT_FOUND, "no such version")
    return PipFailure(OTHER, "failed")


def _line_around(output: str, match: re.Match[str]) -> str:
    """The line of ``output`` the match is on, cut around the match to a readable length
    (pip's retry warnings repeat a long urllib3 repr: the evidence is one phrase of it)."""
    start = output.rfind("\n", 0, match.start()) + 1
    end = output.find("\n", match.end())
    line = output[start : end if end != -1 else None].strip()
    if len(line) <= _EVIDENCE_LIMIT:
        return line
    at = match.start() - start
    left = max(0, at - _EVIDENCE_LIMIT // 2)
    return f"...{line[left : left + _EVIDENCE_LIMIT]}..."
