"""Turn a sysbench command line pasted from a white paper, a blog or a shell history into a scenario.

Pasted commands are rarely clean. White papers wrap them across lines in the middle of a word (`--mysql-` /
`user=xxx`), PDF extraction inserts spaces before underscores (`update _non _index.lua`) and after `--`
(`-- max-requests=…`), Markdown escapes underscores (`oltp\\_new.lua`), and people paste prompts, `sudo`,
comments and placeholders (`XXX`, `<data>`, `${threads}`). Commands use both the sysbench 0.5 spellings
(`--num-threads`, `--max-time`, `--test=…/oltp.lua`, `--oltp-table-size`) and the 1.0 ones.

A thread value may be a list (`1,2,4`, `{1,2,4}`) or a range: `{2~3000}` (the notation of seed 003) reads as
the powers of two from its start to its end plus both ends (2, 4, …, 2048, 3000), and so does a bash range
`{2..3000}` too long to run every value of; a short one (`{1..8}`) reads as every value, as bash expands it.

parse_command reads all of that into a ParsedCommand: the test, the command word, the dataset and run size,
the thread counts, validated scenario options and a hint of the target (never its password). Whatever it
cannot keep is named in `warnings`; it only gives up (CommandError) when it finds no test it can run.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import shlex
from dataclasses import dataclass, field

from campaigns.sysbench.catalogue import (
    BUILTIN_TO_LEGACY,
    COMMON_OPTIONS,
    LEGACY_TO_BUILTIN,
    TESTS,
    OptionError,
    OptionSpec,
    canonical_option_name,
    dataset_option_names,
    format_value,
    option_spec,
    unsafe_reason,
    validate_options,
)
from campaigns.sysbench.hosttests import host_options_problem, is_host_test
from campaigns.sysbench.threads import ThreadListError, parse_thread_list

COMMANDS = ("prepare", "run", "cleanup")

# Longer than any real command by far; bounds the work done on whatever gets pasted.
MAX_COMMAND_CHARS = 65_536



class CommandError(ValueError):
    """The text holds no sysbench test benchapp can run."""


@dataclass
class ParsedCommand:
    """What a pasted command asks for.

    `threads` lists the thread counts to run (empty when the command gives none). `events` is None when there
    is no limit (sysbench's `--events=0` / `--max-requests=0`). `options` are validated, under canonical
    names, without tables, table size, threads, time, events and connection options. `target_hint` may hold
    host, port, socket, user, db and driver, never a password. `placeholders` names the options whose value
    was a placeholder to fill in, such as `threads` for `--threads=XXX`.
    """

    test: str
    command: str | None = None
    tables: int | None = None
    table_size: int | None = None
    threads: list[int] = field(default_factory=list)
    time_s: int | None = None
    events: int | None = None
    options: dict[str, object] = field(default_factory=dict)
    target_hint: dict[str, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


# --- text clean-up ----------------------------------------------------------------------------------------------

_ODD_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\t\f\v]")
_INVISIBLE = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff]")
_WIDE_DASH = re.compile(r"(^|(?<=\s))[\u2013\u2014\u2015\u2212](?=[A-Za-z])|[\u2010\u2011\u2012\u2013\u2014\u2212]")
_CURLY_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})

# `$ `, `# `, `shell> `, `[root@db ~]# `, `me@host:~/sb$ `
_PROMPT = re.compile(
    r"^\s*(?:\[[^\]\n]{0,80}\]\s*[#$%]|[\w.-]{1,64}@[\w.-]{1,255}(?::\S{0,255})?\s*[#$%]|"
    r"(?:shell|bash|sh|zsh)>|[$%>])\s+"
)
_ROOT_PROMPT = re.compile(r"^\s*#\s+")
_LOOKS_LIKE_COMMAND = re.compile(r"(?:\S*/)?sysbench\S*|sudo|env|nohup|time|[.~]?/\S+|[A-Za-z_]\w*=\S*", re.I)

# A line that ends inside a word: `--mysql-`, `--`, `…/oltp_legacy/`. White papers break commands there.
_BROKEN_END = re.compile(r"\S[-/]$")
_CONTINUES_WORD = re.compile(r"[A-Za-z0-9_.<\[{$]")

_BRACKETED = re.compile(r"\[[^\[\]\n]{1,80}\]|<[^<>\n]{1,80}>|\{[^{}\n]{1,80}\}|\$\{[^{}\n]{1,80}\}")
_KEPT_SPACE = "\x1f"


def _strip_comment(line: str) -> str:
    """Drop an unquoted `# …` comment that starts a word, as a shell would."""
    quote = ""
    previous = " "
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and previous.isspace():
            return line[:index]
        previous = char
    return line


def _logical_line(text: str, warnings: list[str]) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _INVISIBLE.sub("", text)
    cleaned = _ODD_SPACES.sub(" ", text)
    cleaned = _WIDE_DASH.sub(lambda m: "--" if m.group(1) is not None else "-", cleaned)
    cleaned = cleaned.translate(_CURLY_QUOTES)
    if cleaned != text.replace("\t", " "):
        warnings.append("typographic dashes, quotes or spaces were read as plain ASCII ones")
    # A backslash at the end of a line continues the command, as in a shell (trailing blanks forgiven).
    cleaned = re.sub(r"\\[ ]*\n", "", cleaned)

    lines: list[str] = []
    for line in cleaned.split("\n"):
        prompt = _PROMPT.match(line) or _ROOT_PROMPT.match(line)
        if prompt:
            rest = line[prompt.end():]
            # `# sysbench …` is a root prompt; `## Prepare data` or `# a note` is a comment.
            if prompt.re is _ROOT_PROMPT and not _LOOKS_LIKE_COMMAND.match(rest):
                continue
            line = rest
        line = _strip_comment(line).strip()
        if line:
            lines.append(line)

    joined = ""
    repaired: list[str] = []
    for line in lines:
        if joined and _BROKEN_END.search(joined) and _CONTINUES_WORD.match(line):
            head = joined.rsplit(" ", 1)[-1]
            joined += line
            repaired.append(head + line.split(" ", 1)[0])
        else:
            joined = f"{joined} {line}" if joined else line
    if repaired:
        warnings.append(
            f"joined {len(repaired)} word(s) broken across lines, e.g. {repaired[0][:60]!r}"
        )
    return joined


def _tokenise(text: str, warnings: list[str]) -> list[str]:
    line = _logical_line(text, warnings)
    # Keep `[thread count]` or `<db name>` one word, as the placeholder it is.
    line = _BRACKETED.sub(lambda m: m.group(0).replace(" ", _KEPT_SPACE), line)
    try:
        lexer = shlex.shlex(line, posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError as error:
        warnings.append(f"could not read the shell quoting ({error}); the words were taken as they stand")
        tokens = line.split()
    return [token.replace(_KEPT_SPACE, " ") for token in tokens]


# --- tokens -> the sysbench command ------------------------------------------------------------------------------

_SEPARATORS = {";", "&&", "||", "|", "&", ";;"}
_WRAPPERS = {"sudo", "env", "nohup", "time", "exec", "command", "nice", "ionice", "stdbuf", "taskset", "numactl"}
_REDIRECT = re.compile(r"^(?:[0-9]*|&)(?:>>?|<)(?:&?[0-9-]*)?")
_NUMBER = re.compile(r"-[0-9.]+")
_BOOL_WORDS = {"on", "off", "true", "false", "1", "0"}
_OTHER_COMMANDS = {
    "help": "'help' only prints the test's options",
    "prewarm": "'prewarm' (loading the tables into the buffer pool) is not a step benchapp runs",
}


def _is_program(token: str) -> bool:
    if token.startswith("-"):
        return False
    base = token.rsplit("/", 1)[-1]
    return bool(re.fullmatch(r"sysbench[\w.+-]*", base, re.I)) and not base.lower().endswith(".lua")


def _split_separators(tokens: list[str]) -> list[str]:
    result: list[str] = []
    for token in tokens:
        if token in _SEPARATORS:
            result.append(";")
        elif token.endswith(";") and len(token) > 1:
            result.extend([token.rstrip(";"), ";"])
        else:
            result.append(token)
    return result


def _all_option_names() -> set[str]:
    names = set(COMMON_OPTIONS) | set(_FIELDS) | set(_DROPPED) | set(_HINTS) | {"test", "tx-rate"}
    names |= set(_RENAMED) | {"mysql-password", "pgsql-password"}
    for spec in TESTS.values():
        names |= set(spec.options)
    return names


def _repair_tokens(tokens: list[str], warnings: list[str]) -> list[str]:
    """Undo the spaces PDF copies put inside words: `update _non _index.lua`, `./sysbench _orig`, `-- max-…`."""
    repaired: list[str] = []
    glued: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.startswith("_") and len(token) > 1 and repaired and repaired[-1] != ";":
            repaired[-1] += token
            glued.append(repaired[-1])
        elif token == "--" and index + 1 < len(tokens):
            following = tokens[index + 1]
            if canonical_option_name(following.split("=", 1)[0]) in _KNOWN_NAMES:
                repaired.append("--" + following)
                glued.append(repaired[-1])
                index += 1
            else:
                warnings.append("a lone '--' was ignored")
        elif token in ("-", "--"):
            warnings.append(f"a lone {token!r} was ignored")
        else:
            repaired.append(token)
        index += 1
    if glued:
        warnings.append(
            f"joined {len(glued)} word(s) split by a stray space, e.g. {glued[0][:60]!r}"
        )
    return repaired


@dataclass
class _Segment:
    """The words of one sysbench invocation, and what surrounded it in the paste."""

    program: str | None
    args: list[str]
    before: list[str]
    after: list[str]


def _is_option_value(tokens: list[str], index: int) -> bool:
    """`--mysql-db sysbench`: the word after an option that takes a value is that value, not a program."""
    if index == 0:
        return False
    previous = tokens[index - 1]
    if not previous.startswith("-") or "=" in previous:
        return False
    spec = _ALL_SPECS.get(canonical_option_name(previous))
    return spec is not None and spec.type != "bool"


def _segments(tokens: list[str]) -> list[_Segment]:
    programs = [i for i, token in enumerate(tokens) if _is_program(token) and not _is_option_value(tokens, i)]
    segments: list[_Segment] = []
    if not programs:
        # No `sysbench` word at all: read each statement as sysbench's arguments.
        start = 0
        for end in [i for i, token in enumerate(tokens) if token == ";"] + [len(tokens)]:
            if end > start:
                segments.append(_Segment(None, tokens[start:end], tokens[:start], tokens[end:]))
            start = end + 1
        return segments
    for position, index in enumerate(programs):
        end = len(tokens)
        for probe in range(index + 1, len(tokens)):
            if tokens[probe] == ";" or (position + 1 < len(programs) and probe == programs[position + 1]):
                end = probe
                break
        segments.append(_Segment(tokens[index], tokens[index + 1:end], tokens[:index], tokens[end:]))
    return segments


def _describe_before(before: list[str]) -> str | None:
    """The text before the sysbench word that matters to the reader (wrappers like sudo do not)."""
    statement = before[len(before) - before[::-1].index(";"):] if ";" in before else before
    earlier = before[: len(before) - len(statement)]
    words = [w for w in earlier if w != ";"]
    stated = list(statement)
    if stated and (stated[0] in _WRAPPERS or re.fullmatch(r"[A-Za-z_]\w*=.*", stated[0])):
        stated = []
    ignored = words + stated
    return " ".join(ignored)[:80] if ignored else None


# --- tests -------------------------------------------------------------------------------------------------------

_LEGACY_STEMS = {
    "oltp": "oltp_legacy/oltp.lua",
    "select": "oltp_legacy/select.lua",
    "update_non_index": "oltp_legacy/update_non_index.lua",
}
# sysbench 0.5 scripts that have an exact 1.0 counterpart.
_OLD_SCRIPTS = {
    "update_index": "oltp_update_index",
    "insert": "oltp_insert",
    "delete": "oltp_delete",
    "oltp_simple": "oltp_point_select",
}
_BACKUP_SUFFIXES = (".bak", ".orig", ".old", ".backup", "~")


def _resolve_test(raw: str) -> tuple[str | None, str | None]:
    """(test, note) for a test name or script path; (None, reason) when it is no test benchapp runs."""
    path = raw.strip().replace("\\", "/")
    base = path.rstrip("/").rsplit("/", 1)[-1]
    name = base.lower()
    note = None
    for suffix in _BACKUP_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            note = f"read {base!r} as the script it is a copy of"
    is_script = name.endswith(".lua")
    stem = name[:-4] if is_script else name
    if is_host_test(stem):
        # sysbench's built-in host tests (cpu, memory, fileio, threads, mutex) are C code, never a script:
        # a `cpu.lua` is someone's own script of that name.
        if not is_script:
            return stem, note
        return None, f"{base!r} is not a stock sysbench script (sysbench's built-in {stem} test has no .lua)"
    if stem in TESTS and not TESTS[stem].legacy:
        return stem, note
    if stem in _LEGACY_STEMS:
        return _LEGACY_STEMS[stem], note
    if stem in _OLD_SCRIPTS:
        return _OLD_SCRIPTS[stem], f"sysbench 0.5's {base} read as {_OLD_SCRIPTS[stem]}, its 1.0 counterpart"
    if not is_script and re.fullmatch(r"[\w.-]+", stem):
        # A bare name is a test sysbench looks up by name: one it does not have is a typo, not a custom script
        # (sysbench itself stops with "Cannot find benchmark"), so it is named with the nearest test instead of
        # being read as the legacy oltp.lua.
        unknown = _unknown_test_message(base)
        if unknown is not None:
            return None, unknown
    if "oltp" in stem and re.fullmatch(r"[\w.-]+", stem):
        return "oltp_legacy/oltp.lua", (
            f"{base!r} is not a stock sysbench script; read as the legacy oltp.lua, whose oltp-* options it takes"
        )
    return None, f"{raw[:80]!r} is not a test benchapp knows"


UNKNOWN_TEST_PREFIX = "unknown sysbench test "


def _unknown_test_message(name: str) -> str | None:
    """"unknown sysbench test 'x': did you mean y?" for a bare name near a 1.0 test, or one that says oltp;
    None for any other word (it may be an option's value, which the caller reports differently)."""
    known = [test for test, spec in TESTS.items() if not spec.legacy] + list(_LEGACY_STEMS)
    close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.8)
    if close:
        return f"{UNKNOWN_TEST_PREFIX}{name[:80]!r}: did you mean {close[0]}?"
    if "oltp" in name.lower():
        return f"{UNKNOWN_TEST_PREFIX}{name[:80]!r}: sysbench 1.0's tests are {', '.join(known[:4])}, …"
    return None


# --- options -----------------------------------------------------------------------------------------------------

# Options that fill ParsedCommand's own fields, with their 0.5 spellings.
_FIELDS = {
    "threads": "threads",
    "num-threads": "threads",
    "time": "time",
    "max-time": "time",
    "events": "events",
    "max-requests": "events",
    "tables": "tables",
    "oltp-tables-count": "tables",
    "table-size": "table_size",
    "oltp-table-size": "table_size",
}
# Connection options -> the target hint key, and the driver they imply.
_HINTS = {
    "mysql-host": ("host", "mysql"),
    "mysql-port": ("port", "mysql"),
    "mysql-socket": ("socket", "mysql"),
    "mysql-user": ("user", "mysql"),
    "mysql-db": ("db", "mysql"),
    "pgsql-host": ("host", "pgsql"),
    "pgsql-port": ("port", "pgsql"),
    "pgsql-user": ("user", "pgsql"),
    "pgsql-db": ("db", "pgsql"),
    "db-driver": ("driver", None),
}
# Older names with a current equivalent (sysbench 0.4's oltp-dist-* became the rand-* options).
_RENAMED = {
    "tx-rate": "rate",
    "oltp-dist-type": "rand-type",
    "oltp-dist-pct": "rand-spec-pct",
    "oltp-dist-res": "rand-spec-res",
    "oltp-dist-iter": "rand-spec-iter",
}
# Options sysbench 1.0.20 does not have (or a scenario may not carry), and why they are dropped.
_DROPPED = {
    "rand-init": "sysbench 0.5 option; 1.0 always fills the tables with random data",
    "init-rng": "sysbench 0.4 option; 1.0 seeds its generator by --rand-seed",
    "mysql-engine-trx": "sysbench 0.4/0.5 option; 1.0 does not have it",
    "myisam-max-rows": "sysbench 0.5 MyISAM-only option; benchapp does not carry it",
    "mysql-create-options": "sysbench 0.5 option; 1.0 does not have it",
    "oltp-test-mode": "sysbench 0.4 option; neither 0.5's oltp.lua nor 1.0 reads it",
    "oltp-reconnect-mode": "sysbench 0.4 option; 1.0 does not have it",
    "oltp-sp-name": "sysbench 0.4 option; 1.0 does not have it",
    "warmup-time": "sysbench 1.1 option; 1.0.20 refuses it",
    "mysql-dry-run": "a dry run does not talk to the database, so it measures nothing",
    "config-file": "reads further options from a file benchapp does not have",
    "help": "prints help instead of running",
    "version": "prints the version instead of running",
}
_LEGACY_ONLY = {
    "oltp-read-only": "has no 1.0 option; the 1.0 test oltp_read_only is its counterpart",
    "oltp-write-only": "has no 1.0 option; the 1.0 test oltp_write_only is its counterpart",
}
_KNOWN_NAMES: set[str] = set()  # filled below, once every table above exists

_PLACEHOLDER = re.compile(
    r"[xX]{2,}|<[^<>]*>|\$\{[^{}]*\}|\$[A-Za-z_]\w*|\[[^\[\]]*\]|\{[A-Za-z_][^{}]*\}|%[A-Za-z_]\w*%|\?{2,}|\.{3}|…"
)


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(value.strip()))


def _all_specs() -> dict[str, OptionSpec]:
    specs = dict(COMMON_OPTIONS)
    for test in TESTS.values():
        specs.update(test.options)
    return specs


_ALL_SPECS = _all_specs()


def _takes_value(name: str, following: str) -> bool:
    """Whether `--name following` means `--name=following` (sysbench accepts both)."""
    lowered = following.lower()
    if following == ";" or (following.startswith("-") and not _NUMBER.fullmatch(following)):
        return False
    if lowered in COMMANDS or lowered in _OTHER_COMMANDS:
        return False
    canonical = canonical_option_name(name)
    if canonical == "test":
        return True
    spec = _ALL_SPECS.get(canonical) or _ALL_SPECS.get(LEGACY_TO_BUILTIN.get(canonical, ""))
    if spec is not None:
        # A bare boolean flag is on; the next word is its value only if it is one of sysbench's on/off words.
        return lowered in _BOOL_WORDS if spec.type == "bool" else True
    # An option we do not know: its next word is its value unless it reads as the test or the program.
    return not (lowered.endswith(".lua") or lowered in TESTS or _is_program(following))


@dataclass(slots=True)
class ScenarioFields:
    """What a scenario stores of a test and its options: the options left once the scenario's own fields
    (percentile, report interval) are taken out and what benchapp manages itself is dropped, with a note each."""

    test: str
    options: dict[str, object]
    time_s: int | None
    report_interval_s: int | None
    percentile: float | None
    notes: list[str]


def scenario_fields(*, test: str, options: dict[str, object], time_s: int | None = None) -> ScenarioFields:
    """The one mapping from a parsed command's (or a preset's) test and options to scenario fields; the API,
    the scenario form and the seed templates all use it."""
    options = dict(options)
    percentile = options.pop("percentile", None)
    report_interval = options.pop("report-interval", None)
    notes = []
    if options.pop("histogram", None) is not None:
        notes.append("--histogram: dropped, benchapp always records the latency histogram.")
    if (shutdown := options.pop("forced-shutdown", None)) is not None:
        notes.append(f"--forced-shutdown={format_value(shutdown)}: dropped, benchapp bounds each run itself.")
    return ScenarioFields(
        test=test, options=options, time_s=time_s,
        report_interval_s=None if report_interval is None else int(report_interval) or 1,  # type: ignore[call-overload]
        percentile=None if percentile is None else float(percentile),  # type: ignore[arg-type]
        notes=notes,
    )


# A new scenario's fields where a pasted command says nothing (the Scenario model's defaults).
DEFAULT_TIME_S = 60
DEFAULT_REPORT_INTERVAL_S = 1
DEFAULT_PERCENTILE = 95.0
# Where a command says where to connect and as whom: never kept by a scenario (a target holds it).
CONNECTION_OPTION = re.compile(r"(mysql|pgsql)-(host|port|socket|user|password|db)\b|db-driver\b")
CONNECTION_WARNING = re.compile(r"--(mysql|pgsql)-(host|port|socket|user|password|db)\b|--db-driver\b")


@dataclass(slots=True)
class ScenarioProposal:
    """What a pasted command becomes as a new scenario: its fields (with one set of defaults), its dataset's size,
    a name to start from, and a note for everything the command said that the scenario does not keep. `warnings`
    and `placeholders` are the parser's, less those about connection options (summed up in one note)."""

    test: str
    options: dict[str, object]
    time_s: int
    report_interval_s: int
    percentile: float
    tables: int | None
    table_size: int | None
    name: str
    notes: list[str]
    warnings: list[str]
    placeholders: list[str]

    def fields(self) -> dict[str, object]:
        """The Scenario fields it sets."""
        return {"test": self.test, "options": self.options, "time_s": self.time_s,
                "report_interval_s": self.report_interval_s, "percentile": self.percentile}


def command_to_scenario(parsed: ParsedCommand) -> ScenarioProposal:
    """The one mapping of a pasted command to a scenario, for every way in (the API's scenarios/from-command/ and
    the scenario page's "Read the command")."""
    fields = scenario_fields(test=parsed.test, options=parsed.options, time_s=parsed.time_s)
    notes = list(fields.notes)
    if parsed.tables and parsed.table_size:
        notes.append(f"Dataset: {parsed.tables} × {parsed.table_size:,} rows.")
    if parsed.threads:
        shown = ", ".join(str(t) for t in parsed.threads[:16]) + (" …" if len(parsed.threads) > 16 else "")
        notes.append(f"Threads {shown}: a campaign sets the thread counts, not the scenario; once saved, "
                     "“Run it on…” starts a campaign of this scenario at these threads.")
    if parsed.events:
        notes.append(f"--events={parsed.events}: dropped, benchapp runs scenarios for a duration.")
    hint = {k: v for k, v in parsed.target_hint.items() if v not in (None, "")}
    if hint or any(CONNECTION_WARNING.match(w) for w in parsed.warnings):
        shown = ", ".join(f"{k}={v}" for k, v in sorted(hint.items()) if "XXX" not in str(v).upper())
        notes.append(f"Connection options{f' ({shown})' if shown else ''}: dropped, with any password: "
                     "a target holds where to connect.")
    if parsed.command and parsed.command != "run":
        notes.append(_command_note(parsed.test, parsed.command))
    return ScenarioProposal(
        test=fields.test, options=fields.options, time_s=fields.time_s or DEFAULT_TIME_S,
        report_interval_s=fields.report_interval_s or DEFAULT_REPORT_INTERVAL_S,
        percentile=DEFAULT_PERCENTILE if fields.percentile is None else fields.percentile,
        tables=parsed.tables, table_size=parsed.table_size, name=f"{parsed.test} (pasted)", notes=notes,
        warnings=[w for w in parsed.warnings if not CONNECTION_WARNING.match(w)],
        placeholders=[p for p in parsed.placeholders if not CONNECTION_OPTION.match(p)],
    )


def _command_note(test: str, command: str) -> str:
    """What a pasted `prepare` or `cleanup` becomes: benchapp runs those steps itself (a host test other than
    fileio has none)."""
    spec = TESTS[test]
    if not spec.host:
        return f"The command was '{command}': benchapp prepares and cleans up by itself."
    if test == "fileio":
        return (f"The command was '{command}': benchapp prepares fileio's test files on the client host before "
                "each run and removes them after it, by itself.")
    return f"The command was '{command}': {test} has no {command} step; benchapp runs it."


def _thread_list(text: str, warnings: list[str], written: str) -> list[int]:
    """The thread counts of an option's value, by the one thread-list rule; what it cannot read is warned
    about and dropped (a pasted command still fills the rest of the form)."""
    try:
        parsed = parse_thread_list(text)
    except ThreadListError as exc:
        warnings.append(f"{written}: {exc}; dropped")
        return []
    warnings.extend(f"{written}={note}" for note in parsed.notes)
    return parsed.values


class _Reader:
    """Interprets one sysbench invocation's options once its test is known."""

    def __init__(self, test: str, warnings: list[str]) -> None:
        self.test = test
        self.spec = TESTS[test]
        self.warnings = warnings
        self.result = ParsedCommand(test=test, warnings=warnings)
        self.hints: dict[str, dict[str, object]] = {"mysql": {}, "pgsql": {}}
        self.driver: str | None = None
        self.fields_seen: set[str] = set()

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def placeholder(self, name: str, written: str, value: str) -> None:
        if name not in self.result.placeholders:
            self.result.placeholders.append(name)
        self.warn(f"{written}={value} is a placeholder; fill it in")

    def read(self, written: str, value: str | None) -> None:
        name = canonical_option_name(written)
        if not name or name == "test":
            return
        if name in ("mysql-password", "pgsql-password"):
            self.warn(f"{written}: the password was dropped; benchapp keeps passwords with the target only")
        elif name in _FIELDS:
            self.read_field(written, _FIELDS[name], value)
        elif name in _HINTS:
            self.read_hint(written, name, value)
        elif name in _DROPPED:
            self.warn(f"{written}: dropped ({_DROPPED[name]})")
        else:
            self.read_option(written, _RENAMED.get(name, name), value)

    def read_field(self, written: str, field_name: str, value: str | None) -> None:
        if value is None:
            self.warn(f"{written}: needs a value; ignored")
            return
        if field_name in self.fields_seen:
            self.warn(f"{written}: given twice; the last value ({value}) is kept")
        self.fields_seen.add(field_name)
        if field_name == "threads":
            if _is_placeholder(value):
                self.placeholder("threads", written, value)
            else:
                self.result.threads = _thread_list(value, self.warnings, written)
            return
        if field_name in ("tables", "table_size"):
            tables_option, size_option = dataset_option_names(self.test)
            option = tables_option if field_name == "tables" else size_option
            if option is None:
                why = ("a host test, it has no tables" if self.spec.host
                       else "it makes one table per thread")
                self.warn(f"{written}: {self.test} has no such option ({why}); dropped")
                return
        else:
            option = field_name
        if _is_placeholder(value):
            self.placeholder(option, written, value)
            return
        try:
            number = validate_options(self.test, {option: value})[option]
        except OptionError as error:
            self.warn(f"{written}: {error.message}; dropped")
            return
        assert isinstance(number, int)
        if field_name == "tables":
            self.result.tables = number
        elif field_name == "table_size":
            self.result.table_size = number
        elif field_name == "time":
            self.result.time_s = number
        else:
            # 0 events means no limit, which None says without a magic number.
            self.result.events = number or None

    def read_hint(self, written: str, name: str, value: str | None) -> None:
        key, driver = _HINTS[name]
        if value is None or value == "":
            self.warn(f"{written}: needs a value; ignored")
            return
        if _is_placeholder(value):
            self.placeholder(name, written, value)
            return
        reason = unsafe_reason(value)
        if reason:
            self.warn(f"{written}: value {reason}; ignored")
            return
        if key == "driver":
            if value.lower() not in ("mysql", "pgsql"):
                self.warn(f"{written}: {value[:40]!r} is not a driver benchapp runs (mysql, pgsql); ignored")
            else:
                self.driver = value.lower()
            return
        hint: object = value
        if key == "port":
            if re.fullmatch(r"[0-9]{1,5}", value) and 1 <= int(value) <= 65535:
                hint = int(value)
            elif not re.fullmatch(r"[0-9]{1,5}(,[0-9]{1,5})+", value):
                self.warn(f"{written}: {value[:40]!r} is not a port; ignored")
                return
        assert driver is not None
        self.hints[driver][key] = hint

    def read_option(self, written: str, name: str, value: str | None) -> None:
        if self.spec.legacy and name in BUILTIN_TO_LEGACY:
            name = BUILTIN_TO_LEGACY[name]
        elif not self.spec.legacy and name in LEGACY_TO_BUILTIN:
            name = LEGACY_TO_BUILTIN[name]
        elif not self.spec.legacy and name in _LEGACY_ONLY:
            shown = f"={value}" if value is not None else ""
            self.warn(f"{written}{shown}: {_LEGACY_ONLY[name]}; dropped")
            return
        try:
            spec = option_spec(self.test, name)
        except OptionError as error:
            self.warn(f"{written}: {error.message}; dropped")
            return
        if value is None:
            if spec.type != "bool":
                self.warn(f"{written}: needs a value; ignored")
                return
            value = "on"  # a bare --flag switches it on, as in sysbench
        if _is_placeholder(value):
            self.placeholder(spec.name, written, value)
            return
        try:
            typed = validate_options(self.test, {spec.name: value})[spec.name]
        except OptionError as error:
            self.warn(f"{written}: {error.message}; dropped")
            return
        previous = self.result.options.get(spec.name)
        if spec.name in self.result.options and previous != typed:
            self.warn(f"{written}: given twice; the last value ({value}) is kept")
        self.result.options[spec.name] = typed

    def finish(self) -> ParsedCommand:
        # Combinations that fail only together (percentile=0 with histogram=on) lose the named option.
        for _ in range(len(self.result.options) + 1):
            try:
                validate_options(self.test, self.result.options)
                break
            except OptionError as error:
                self.warn(f"{error}; dropped")
                self.result.options.pop(canonical_option_name(error.option), None)
        if self.spec.host:
            # What Scenario.clean checks of a host test beyond its options' values (fileio's mode), said now; the
            # size limit of fileio's files is the installation's, checked when the scenario is saved.
            problem = host_options_problem(self.test, self.result.options, max_file_bytes=None)
            if problem is not None:
                self.warn(f"--{problem[0]}: {problem[1]}; the scenario cannot be saved without it")
        driver = self.driver
        if driver is None and (self.hints["pgsql"] or self.hints["mysql"]):
            driver = "pgsql" if self.hints["pgsql"] and not self.hints["mysql"] else "mysql"
        if driver is not None:
            other = "pgsql" if driver == "mysql" else "mysql"
            if self.hints[other]:
                self.warn(f"{other}-* connection options ignored: the driver is {driver}")
            self.result.target_hint = {**self.hints[driver], "driver": driver}
        return self.result


# --- the entry point ---------------------------------------------------------------------------------------------


def _read_words(args: list[str], warnings: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Split sysbench's arguments into (option as written, value or None) pairs and positional words."""
    options: list[tuple[str, str | None]] = []
    positionals: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        redirect = _REDIRECT.match(token)
        if redirect and redirect.group(0) and not token.startswith("-"):
            if redirect.end() == len(token) and index + 1 < len(args):
                index += 1
            warnings.append(f"output redirection {token!r} ignored")
        elif token.startswith("-") and len(token) > 1 and not _NUMBER.fullmatch(token):
            body = token.lstrip("-")
            if "=" in body:
                written, value = token.split("=", 1)
                options.append((written, value))
            elif index + 1 < len(args) and _takes_value(body, args[index + 1]):
                options.append((token, args[index + 1]))
                index += 1
            else:
                options.append((token, None))
        else:
            positionals.append(token)
        index += 1
    return options, positionals


def _cut_off_at(options: list[tuple[str, str | None]]) -> str | None:
    """`--mys` at the very end, the start of no option we know: the text was cut off (seed 001 is, in print)."""
    if not options or options[-1][1] is not None:
        return None
    written = options[-1][0]
    name = canonical_option_name(written)
    if name in _KNOWN_NAMES:
        return None
    if not name or any(known.startswith(name) for known in _KNOWN_NAMES):
        return written
    return None


def _parse_segment(segment: _Segment, default_test: str | None = None) -> ParsedCommand:
    warnings: list[str] = []
    options, positionals = _read_words(segment.args, warnings)
    cut_off = _cut_off_at(options)
    if cut_off is not None:
        options = options[:-1]
    command: str | None = None
    candidates: list[str] = [value for written, value in options
                             if canonical_option_name(written) == "test" and value]
    for word in positionals:
        lowered = word.lower()
        if lowered in COMMANDS:
            if command is not None and command != lowered:
                warnings.append(f"two commands given ({command}, {lowered}); {command} is kept")
            command = command or lowered
        elif lowered in _OTHER_COMMANDS:
            warnings.append(f"{_OTHER_COMMANDS[lowered]}; no command kept")
        else:
            candidates.append(word)
    test: str | None = None
    reasons: list[str] = []
    for candidate in candidates:
        resolved, note = _resolve_test(candidate)
        if resolved is None:
            reasons.append(note or candidate)
            continue
        if test is None:
            test = resolved
            if note:
                warnings.append(note)
        elif resolved != test:
            warnings.append(f"a second test {candidate[:80]!r} was ignored; {test} is kept")
    if test is None and default_test is not None and not reasons:
        test = default_test
        warnings.append(f"the command names no test; {test} was assumed")
    if test is None:
        misspelt = [r for r in reasons if r.startswith(UNKNOWN_TEST_PREFIX)]
        if misspelt:
            raise CommandError(misspelt[0])
        message = "no sysbench test found in the command"
        if reasons:
            message += ": " + "; ".join(reasons[:3])
        if cut_off is not None:
            message += f" (the command looks cut off after {cut_off!r})"
        raise CommandError(message)
    for reason in reasons:
        warnings.append(f"ignored: {reason}")
    if cut_off is not None:
        warnings.append(f"the command looks cut off after {cut_off!r}; the rest of it is missing")
    reader = _Reader(test, warnings)
    reader.result.command = command
    for written, value in options:
        if canonical_option_name(written) != "test":
            reader.read(written, value)
    return reader.finish()


def parse_command(text: str, *, default_test: str | None = None) -> ParsedCommand:
    """Read a pasted sysbench command; CommandError only when it holds no test benchapp can run.

    `default_test` is assumed, with a warning, when the text names no test at all: a form where the user has
    already chosen the test can still read a command that lost its end (as every command printed in seed 001
    did). A test the text does name, even one benchapp cannot run, is never replaced by it.
    """
    if not isinstance(text, str):
        raise CommandError("expected the command as text")
    if default_test is not None and (default_test not in TESTS):
        raise CommandError(f"unknown default test {str(default_test)[:60]!r}")
    if len(text) > MAX_COMMAND_CHARS:
        raise CommandError(f"the text is longer than {MAX_COMMAND_CHARS} characters; paste one command")
    warnings: list[str] = []
    tokens = _repair_tokens(_split_separators(_tokenise(text, warnings)), warnings)
    segments = _segments(tokens)
    if not segments:
        raise CommandError("no sysbench command found: the text is empty")
    first_error: CommandError | None = None
    for position, segment in enumerate(segments):
        try:
            parsed = _parse_segment(segment, default_test)
        except CommandError as error:
            first_error = first_error or error
            continue
        parsed.warnings[:0] = warnings
        if segment.program is None:
            parsed.warnings.insert(0, "no 'sysbench' word found; the text was read as its arguments")
        ignored_before = _describe_before(segment.before)
        if ignored_before and segment.program is not None:
            parsed.warnings.append(f"ignored text before the sysbench command: {ignored_before!r}")
        later = [s for s in segments[position + 1:] if _has_test(s)]
        if later:
            parsed.warnings.append(f"{len(later)} further sysbench command(s) in the text were ignored")
        elif [word for word in segment.after if word != ";"]:
            rest = " ".join(word for word in segment.after if word != ";")
            parsed.warnings.append(f"ignored text after the sysbench command: {rest[:80]!r}")
        return parsed
    assert first_error is not None
    raise first_error


def _has_test(segment: _Segment) -> bool:
    try:
        _parse_segment(segment)
    except CommandError:
        return False
    return True


_KNOWN_NAMES.update(_all_option_names())
