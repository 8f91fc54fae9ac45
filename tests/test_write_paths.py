"""One write path per kind of row. Targets, datasets, scenarios, campaigns, annotations, schedules
(and their django-celery-beat entries) and share links are created and changed only by their service module, which
runs the model's full validation; forms, the API, the admin, imports, seeds, quick compare and commands call it.

The scan reads every module of the app as Python (ast) and flags, outside the owner module of the model:
- a write through the model's manager (`Target.objects.create(…)`, `….filter(…).update(…)`, get_or_create, …);
- a save() on a variable named after one of these models (`target.save()`, `campaign.save(update_fields=…)`);
- many-to-many changes of a campaign (`….targets.add(…)`, `….scenarios.set(…)`);
- `super().save/create/update(…)` in a form or serializer of one of these models (Django's and DRF's own writes);
- a ModelSerializer of one of these models without create() and update() of its own (unless every field is
  read-only), a ModelForm without its own save(), and an admin of one of these models without save_model();
- SQL text that inserts into or updates their tables.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICES = "campaigns/services"
OWNERS: dict[str, set[str]] = {
    "Target": {f"{SERVICES}/targets.py"},
    "Dataset": {f"{SERVICES}/datasets.py"},
    "Scenario": {f"{SERVICES}/scenarios.py"},
    "Campaign": {f"{SERVICES}/campaigns.py"},
    "Annotation": {f"{SERVICES}/annotations.py"},
    "CampaignSchedule": {"campaigns/monitoring/schedules.py"},
    "PeriodicTask": {"campaigns/monitoring/schedules.py"},
    "CrontabSchedule": {"campaigns/monitoring/schedules.py"},
    "ShareLink": {"campaigns/sharing.py"},
    "Workload": {f"{SERVICES}/workloads.py"},
    "WorkloadVersion": {f"{SERVICES}/workloads.py"},
}
# The one generic writer every service ends in (row.save() after full_clean).
GENERIC = {f"{SERVICES}/rows.py"}
# Writes that are not a user's row being made or changed, each with its reason.
ALLOWED = {
    # Re-encrypts stored secrets under a new key in place: the same values, no field a user sets.
    ("campaigns/management/commands/rotate_field_key.py", "update"),
}
WRITES = {"create", "get_or_create", "update_or_create", "bulk_create", "bulk_update", "update"}
M2M = {"add", "set", "remove", "clear"}
VARIABLE = re.compile(r"^_?(target|scenario|dataset|campaign|schedule|annotation|share_?link|link|copy)s?$",
                      re.IGNORECASE)
SQL_WRITE = re.compile(r"\b(INSERT\s+INTO|UPDATE)\s+\"?campaigns_(target|scenario|dataset|campaign|annotation|"
                       r"campaignschedule|sharelink)\b", re.IGNORECASE)
OWNED = set(OWNERS)


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node.id if isinstance(node, ast.Name) else ""


def _meta_model(cls: ast.ClassDef) -> str:
    """The model a form or serializer class names in its Meta (`model = models.Target` or `model = Target`)."""
    for item in cls.body:
        if isinstance(item, ast.ClassDef) and item.name == "Meta":
            for stmt in item.body:
                if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "model" for t in stmt.targets):
                    value = stmt.value
                    return value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")
    return ""


def _read_only(cls: ast.ClassDef) -> bool:
    """Meta says `read_only_fields = fields`: a serializer that only shows rows."""
    for item in cls.body:
        if isinstance(item, ast.ClassDef) and item.name == "Meta":
            for stmt in item.body:
                if (isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "read_only_fields" for t in stmt.targets)
                        and getattr(stmt.value, "id", "") == "fields"):
                    return True
    return False


def _bases(cls: ast.ClassDef) -> set[str]:
    return {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in cls.bases}


def _methods(cls: ast.ClassDef) -> set[str]:
    return {item.name for item in cls.body if isinstance(item, ast.FunctionDef)}


def _registered_model(cls: ast.ClassDef) -> str:
    for deco in cls.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "register" and deco.args:
            arg = deco.args[0]
            return arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", "")
    return ""


def violations(source: str, filename: str) -> list[str]:
    found: list[str] = []
    owned_here = {model for model, owners in OWNERS.items() if filename in owners}
    generic = filename in GENERIC
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            model = _meta_model(node)
            bases, methods = _bases(node), _methods(node)
            if model in OWNED and model not in owned_here:
                if (bases & {"ModelSerializer", "HyperlinkedModelSerializer"} and not {"create", "update"} <= methods
                        and not _read_only(node)):
                    found.append(f"{filename}:{node.lineno}: {node.name} writes {model} through DRF's own create/update")
                if "ModelForm" in bases and "save" not in methods:
                    found.append(f"{filename}:{node.lineno}: {node.name} writes {model} through ModelForm.save")
            admin_of = _registered_model(node)
            if admin_of in OWNED and "save_model" not in methods and "ServiceAdmin" not in bases:
                found.append(f"{filename}:{node.lineno}: the admin of {admin_of} saves it itself")
            for item in ast.walk(node):
                if (model in OWNED and model not in owned_here and isinstance(item, ast.Call)
                        and isinstance(item.func, ast.Attribute) and item.func.attr in {"save", "create", "update"}
                        and isinstance(item.func.value, ast.Call) and getattr(item.func.value.func, "id", "") == "super"):
                    found.append(f"{filename}:{item.lineno}: super().{item.func.attr}() writes {model} in {node.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, root = node.func.attr, _root_name(node.func)
            if name in WRITES and root in OWNED and root not in owned_here and (filename, name) not in ALLOWED:
                found.append(f"{filename}:{node.lineno}: {root}….{name}()")
            elif name == "save" and VARIABLE.match(root) and not generic and not owned_here:
                found.append(f"{filename}:{node.lineno}: {root}.save()")
            elif (name in M2M and isinstance(node.func.value, ast.Attribute)
                  and node.func.value.attr in {"targets", "scenarios"} and "Campaign" not in owned_here
                  and not generic):
                found.append(f"{filename}:{node.lineno}: ….{node.func.value.attr}.{name}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_WRITE.search(node.value):
            found.append(f"{filename}:{node.lineno}: SQL writes a row of a service-owned table")
    return found


def test_rows_users_make_are_written_only_by_their_service():
    found = []
    for path in sorted((ROOT / "campaigns").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        found += violations(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], "rows written outside their service module:\n" + "\n".join(found)


def test_each_service_module_is_seen_writing():
    for model, owners in OWNERS.items():
        for owner in owners:
            text = (ROOT / owner).read_text()
            assert "row_write(" in text or f"{model}.objects" in text or ".save(" in text, (model, owner)


def test_the_scan_catches_each_kind_of_write():
    samples = {
        "Target.objects.create(name='x')": 1,
        "Campaign.objects.filter(pk=1).update(name='y')": 1,
        "Dataset.objects.get_or_create(name='x')": 1,
        "Scenario._default_manager.bulk_create([])": 1,
        "target.save()": 1,
        "campaign.save(update_fields=['baseline_run'])": 1,
        "c.targets.add(t)": 1,
        "cursor.execute('UPDATE campaigns_target SET host = %s')": 1,
        "class F(forms.ModelForm):\n    class Meta:\n        model = Target\n": 1,
        "class S(serializers.ModelSerializer):\n    class Meta:\n        model = models.Campaign\n"
        "    def create(self, data):\n        return super().create(data)\n": 2,
        "@admin.register(models.Scenario)\nclass A(admin.ModelAdmin):\n    pass\n": 1,
        # Not writes of these rows:
        "Target.objects.filter(name='x').exists()": 0,
        "Product.objects.get_or_create(name='x')": 0,
        "user.save()": 0,
        "class F(forms.ModelForm):\n    class Meta:\n        model = Product\n": 0,
        "class S(serializers.ModelSerializer):\n    class Meta:\n        model = Target\n"
        "    def create(self, data):\n        return services.target_create(**data)\n"
        "    def update(self, i, data):\n        return services.target_update(target=i, **data)\n": 0,
    }
    for snippet, expected in samples.items():
        assert len(violations(snippet, "sample.py")) == expected, (snippet, violations(snippet, "sample.py"))
