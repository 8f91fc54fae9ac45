"""Only campaigns/execution/transitions.py writes the status or phase of a Job, a JobClient, a Run or a
PreparedDataset, or any row of an Attempt or a ClientSend (the record of a lost measurement or send), and only
campaigns/execution/results.py calls the transitions that end an attempt.

The scan reads every module of the app as Python (ast) and flags, outside that module:
- a write call (update, create, bulk_create, get_or_create, update_or_create) or a model constructor that
  passes `status`/`phase` (keyword, or a key of `defaults`) on Job/JobClient/Run, or with one of their
  statuses or phases as the value;
- an assignment to `<obj>.status` or `<obj>.phase` with such a value, and a save() naming status or phase
  on an object of those models;
- SQL text that updates status or phase of their tables;
- any write call or constructor of Attempt or ClientSend, and SQL that inserts, updates or deletes their rows.
Other models' statuses (Regression) are theirs to write.

An attempt ends through results.job_close (closed) or results.job_measure_again (measured again), which do
everything an end needs (a settings variant put back, the cache outdated, the outcome logged): nothing else calls
transitions.job_end or transitions.job_requeue, which only move the row.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from campaigns.models import Job, JobClient, PreparedDataset, Run

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "campaigns" / "execution" / "transitions.py"
OWNED_MODELS = {"Job", "JobClient", "Run", "PreparedDataset"}
WRITES = {"update", "create", "bulk_create", "get_or_create", "update_or_create", "bulk_update"}
FIELDS = {"status", "phase"}
STATE_WORDS = {str(v) for v in (*Job.Status.values, *JobClient.Status.values, *Run.Status.values, *Job.Phase.values,
                                *PreparedDataset.Status.values) if v} | {"Status", "Phase"}
SQL_WRITE = re.compile(r"\bUPDATE\s+campaigns_(job|jobclient|run|prepareddataset)\b.*\bSET\b.*\b(status|phase)\s*=",
                       re.IGNORECASE | re.DOTALL)
# Variables that hold one of these models in the app's code; a save() naming status on them is a write.
OWNED_NAMES = re.compile(r"^(job|jobs|client|clients|run|runs|locked|next_job|follower|prepared|dataset)\b",
                         re.IGNORECASE)
# Rows that only the transition module writes, whatever the field.
RECORD_MODELS = {"Attempt", "ClientSend"}
SQL_RECORD = re.compile(r"\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+campaigns_(attempt|clientsend)\b", re.IGNORECASE)
ENDING = {"job_end", "job_requeue"}
ENDER = ROOT / "campaigns" / "execution" / "results.py"


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else ""


def _mentions_state(node: ast.AST) -> bool:
    """The value names Job/JobClient/Run .Status/.Phase, or is a string literal one of their values."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in {"Status", "Phase"} and _root_name(sub) in OWNED_MODELS:
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in STATE_WORDS:
            return True
    return False


def _other_model(node: ast.AST) -> bool:
    """The value names another model's Status (Regression.Status.OPEN…)."""
    return any(isinstance(sub, ast.Attribute) and sub.attr == "Status" and _root_name(sub) not in OWNED_MODELS
               and _root_name(sub) != "" for sub in ast.walk(node))


def violations(source: str, filename: str) -> list[str]:
    found = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            pairs = [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            for kw in node.keywords:
                if kw.arg == "defaults" and isinstance(kw.value, ast.Dict):
                    pairs += [(k.value, v) for k, v in zip(kw.value.keys, kw.value.values, strict=True)
                              if isinstance(k, ast.Constant)]
            if name in RECORD_MODELS or (name in WRITES and _root_name(func) in RECORD_MODELS):
                found.append(f"{filename}:{node.lineno}: {_root_name(func) or name} row written")
            owned_call = name in OWNED_MODELS or (name in WRITES and _root_name(func) in OWNED_MODELS)
            if name in WRITES or name in OWNED_MODELS:
                for field, value in pairs:
                    if field in FIELDS and not _other_model(value) and (owned_call or _mentions_state(value)):
                        found.append(f"{filename}:{node.lineno}: {name}({field}=…)")
            if name == "save":
                for kw in node.keywords:
                    if kw.arg == "update_fields" and any(
                            isinstance(c, ast.Constant) and c.value in FIELDS for c in ast.walk(kw.value)) \
                            and OWNED_NAMES.match(_root_name(func)):
                        found.append(f"{filename}:{node.lineno}: {_root_name(func)}.save(update_fields=[status…])")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and sub.attr in FIELDS and node.value is not None and (
                            _mentions_state(node.value) or OWNED_NAMES.match(_root_name(sub))):
                        found.append(f"{filename}:{node.lineno}: {_root_name(sub)}.{sub.attr} = …")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_WRITE.search(node.value):
            found.append(f"{filename}:{node.lineno}: SQL writes status/phase")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_RECORD.search(node.value):
            found.append(f"{filename}:{node.lineno}: SQL writes an attempt's or a send's rows")
    return found


def test_nothing_but_the_transition_module_writes_a_status_or_phase():
    found = []
    for path in sorted((ROOT / "campaigns").rglob("*.py")):
        if path == OWNER or "migrations" in path.parts:
            continue
        found += violations(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], ("status/phase or attempt rows written outside campaigns/execution/transitions.py:\n"
                         + "\n".join(found))


def test_the_transition_module_itself_is_seen_writing():
    assert len(violations(OWNER.read_text(), "transitions.py")) >= 10


def test_the_scan_catches_each_kind_of_write():
    samples = {
        "Job.objects.filter(pk=1).update(status=Job.Status.FAILED)": 1,
        "run.jobs.filter(x=1).update(status='cancelled', finished_at=now)": 1,
        "Job.objects.filter(pk=1).update(phase='done')": 1,
        "JobClient.objects.create(job=j, status=s)": 1,
        "Run(campaign=c, status=Run.Status.RUNNING)": 1,
        "Run.objects.update_or_create(pk=1, defaults={'status': 'failed'})": 1,
        "run.status = Run.Status.FAILED": 1,
        "job.phase = x": 1,
        "locked.save(update_fields=['status', 'finished_at'])": 1,
        "cursor.execute('UPDATE campaigns_job SET status = %s WHERE id = %s', [s, i])": 1,
        # Not writes of these models' state:
        "Job.objects.filter(status=Job.Status.FAILED).count()": 0,
        "PreparedDataset.objects.filter(pk=1).update(status=PreparedDataset.Status.READY)": 1,
        "prepared.status = PreparedDataset.Status.DROPPED": 1,
        "Regression.objects.filter(pk=1).update(status=Regression.Status.RESOLVED)": 0,
        "Response(body, status=status.HTTP_201_CREATED)": 0,
        "cursor.execute('UPDATE campaigns_job SET heartbeat_at = now() WHERE id = %s RETURNING status', [i])": 0,
        "Attempt.objects.create(job_id=1, number=1, cause='x')": 1,
        "ClientSend.objects.bulk_create(rows)": 1,
        "Attempt(job=j, number=2)": 1,
        "Attempt.objects.filter(job_id=1).update(cause='')": 1,
        "cursor.execute('DELETE FROM campaigns_attempt WHERE job_id = %s', [i])": 1,
        "Attempt.objects.filter(job_id=1).count()": 0,
    }
    for snippet, expected in samples.items():
        assert len(violations(snippet, "sample.py")) == expected, snippet


def ending_calls(source: str, filename: str) -> list[str]:
    """Calls of transitions.job_end or transitions.job_requeue (by attribute or by a name imported from it)."""
    tree = ast.parse(source, filename)
    imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("transitions") for a in node.names if a.name in ENDING}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in ENDING) or (
                    isinstance(func, ast.Name) and func.id in imported):
                found.append(f"{filename}:{node.lineno}")
    return found


def test_only_the_results_module_ends_an_attempt_through_the_bare_transitions():
    found = []
    for path in sorted((ROOT / "campaigns").rglob("*.py")):
        if path in (OWNER, ENDER) or "migrations" in path.parts:
            continue
        found += ending_calls(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], "call results.job_close / results.job_measure_again instead:\n" + "\n".join(found)
    assert len(ending_calls(ENDER.read_text(), "results.py")) == 2
    assert ending_calls("from campaigns.execution.transitions import job_end\njob_end(job_id=1, status='x')", "s") \
        == ["s:2"]
