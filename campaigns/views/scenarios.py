"""Scenarios: a form per sysbench test, seed presets, and "Paste a sysbench command" that fills the form."""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import urlencode

from campaigns import roles
from campaigns.filtersets import ScenarioFilterSet
from campaigns.forms import (
    MANAGED_OPTIONS,
    OPTION_PREFIX,
    CommandPasteForm,
    ScenarioForm,
    form_errors_add,
    option_field_name,
)
from campaigns.models import Dataset, Scenario
from campaigns.models.workloads import version_for_label
from campaigns.sysbench.catalogue import TESTS, format_value
from campaigns.sysbench.cmdline import (
    CommandError,
    ParsedCommand,
    ScenarioProposal,
    command_to_scenario,
    parse_command,
    scenario_fields,
)
from campaigns.sysbench.presets import PRESETS, Preset
from campaigns.sysbench.threads import ThreadListError, format_thread_list, parse_thread_list
from campaigns.views.base import Catalogue, Column, role_required

SCENARIOS = Catalogue(
    key="scenarios", singular="scenario", plural="scenarios", model=Scenario, form_class=ScenarioForm,
    filterset_class=ScenarioFilterSet, detail=True,
    queryset=lambda: Scenario.objects.select_related("dataset"),
    columns=[Column("Name", lambda s: s.name), Column("Test", lambda s: s.test),
             Column("Dataset", lambda s: str(s.dataset)), Column("Duration", lambda s: f"{s.time_s} s", numeric=True),
             Column("Options", lambda s: " ".join(f"--{k}={format_value(v)}" for k, v in sorted(s.options.items()))
                    or "defaults")],
)


# Fields of the page that are not the scenario's: the paste box.
_NOT_INITIAL = {"csrfmiddlewaretoken", "command"}
# The page's buttons, each posting the form to its own view: "Save" to the page itself, the others to the views below.
BUTTONS = ("parse", "preset", "switch")


@role_required(roles.VIEWER)
def scenario_detail(request: HttpRequest, pk: int) -> HttpResponse:
    scenario = get_object_or_404(Scenario.objects.select_related("dataset"), pk=pk)
    options = sorted(scenario.options.items())
    threads = _threads_param(request.GET.get("threads", ""))
    run_query = urlencode({"scenarios": str(scenario.pk), **({"threads": threads} if threads else {})})
    return render(request, "campaigns/scenario_detail.html", {
        "scenario": scenario, "options": [(k, format_value(v)) for k, v in options],
        "pasted_threads": threads, "run_url": f"{reverse('campaigns-new')}?{run_query}",
        "test": TESTS.get(scenario.test), "preset": PRESETS.get(scenario.preset),
        "can_edit": roles.can_edit(request.user), "can_admin": roles.can_admin(request.user),
    })


def _posted_initial(request: HttpRequest) -> dict[str, Any]:
    return {k: v for k, v in request.POST.items() if k not in _NOT_INITIAL}


def _dataset_initial(initial: dict[str, Any], tables: int | None, table_size: int | None) -> None:
    if not tables or not table_size:
        return
    existing = Dataset.objects.filter(tables=tables, table_size=table_size, sizes_by_spec={}).order_by("name").first()
    if existing is not None:
        initial["dataset"] = str(existing.pk)
        return
    initial["dataset"] = ""
    initial["new_dataset_name"] = f"{tables} × {table_size:,} rows"
    initial["new_dataset_tables"] = tables
    initial["new_dataset_table_size"] = table_size


def _set_options(initial: dict[str, Any], options: dict[str, object]) -> None:
    """The form's option fields: these options, and no other."""
    for key in [k for k in initial if k.startswith(OPTION_PREFIX)]:
        del initial[key]
    for name, value in options.items():
        if name not in MANAGED_OPTIONS:
            initial[option_field_name(name)] = format_value(value)


def _apply_options(initial: dict[str, Any], options: dict[str, object]) -> list[str]:
    """Moves a preset's options into the form's fields; returns notes on those the scenario keeps elsewhere."""
    fields = scenario_fields(test=str(initial.get("test", "")), options=options)
    if fields.percentile is not None:
        initial["percentile"] = f"{fields.percentile:g}"
    if fields.report_interval_s is not None:
        initial["report_interval_s"] = fields.report_interval_s
    _set_options(initial, fields.options)
    return list(fields.notes)


def _apply_parsed(initial: dict[str, Any], parsed: ParsedCommand) -> ScenarioProposal:
    """The form filled as the API's from-command proposes (command_to_scenario: the same fields and defaults);
    a name typed already stays."""
    proposal = command_to_scenario(parsed)
    initial["test"] = proposal.test
    _set_options(initial, proposal.options)
    initial["time_s"] = proposal.time_s
    initial["report_interval_s"] = proposal.report_interval_s
    initial["percentile"] = f"{proposal.percentile:g}"
    _dataset_initial(initial, proposal.tables, proposal.table_size)
    if parsed.threads:
        # Kept beside the form (a hidden field) until it is saved, for the scenario page's "Run it on…".
        initial["pasted_threads"] = format_thread_list(parsed.threads)
    if not initial.get("name"):
        initial["name"] = proposal.name
    return proposal


def _apply_preset(initial: dict[str, Any], preset: Preset) -> list[str]:
    initial["test"] = preset.test
    initial["preset"] = preset.key
    notes = _apply_options(initial, preset.options)
    if preset.time_s:
        initial["time_s"] = preset.time_s
    _dataset_initial(initial, preset.tables, preset.table_size)
    if not initial.get("name"):
        initial["name"] = f"seed {preset.seed}: {preset.label}"
    if not initial.get("description"):
        initial["description"] = preset.notes
    if preset.threads:
        notes.append(f"Seed {preset.seed} ran it at {', '.join(str(t) for t in preset.threads)} threads: "
                     "set them on the campaign.")
    return notes


def _scenario(pk: int | None) -> Scenario | None:
    return get_object_or_404(Scenario.objects.select_related("dataset"), pk=pk) if pk else None


@role_required(roles.OPERATOR)
def scenario_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Create or edit a scenario: the page, and its "Save". The page's other buttons post what was typed to views
    of their own (scenario_parse, scenario_preset, scenario_switch), which re-render the form with it kept."""
    scenario = _scenario(pk)
    paste = CommandPasteForm()
    if request.method != "POST":
        initial: dict[str, Any] = {}
        preset = PRESETS.get(request.GET.get("preset", ""))
        notes = _apply_preset(initial, preset) if preset else []
        if (request.GET.get("test") in TESTS or version_for_label(request.GET.get("test"))) and not preset:
            initial["test"] = request.GET["test"]
        form = ScenarioForm(instance=scenario, initial=initial)
        parse_report = None
        if notes and preset is not None:
            parse_report = {"title": f"Preset “{preset.label}” loaded", "warnings": [], "notes": notes}
        return _render(request, form, paste, scenario, parse_report)

    form = ScenarioForm(request.POST, instance=scenario)
    if form.is_valid():
        try:  # a new scenario (and the new dataset it may make) records who made it ("mine")
            saved = form.save_by(user=request.user)
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(request, f"Scenario “{saved.name}” saved.")
            threads = _threads_param(request.POST.get("pasted_threads", ""))
            query = f"?{urlencode({'threads': threads})}" if threads else ""
            return HttpResponseRedirect(reverse("scenarios-detail", args=[saved.pk]) + query)
    return _render(request, form, paste, scenario, None)


@role_required(roles.OPERATOR)
def scenario_parse(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """"Fill the form from the command": the pasted command read into the form, with what it dropped or changed."""
    if request.method != "POST":
        return HttpResponseRedirect(_urls(pk)["save"])
    scenario = _scenario(pk)
    initial = _posted_initial(request)
    paste = CommandPasteForm(request.POST)
    parse_report: dict[str, Any] | None = None
    if paste.is_valid():
        try:
            # A command cut off before its test name (seed 001 prints them so) still fills the
            # form: the test chosen in the form is assumed, with a warning.
            current_test = initial.get("test") if initial.get("test") in TESTS else None
            parsed = parse_command(paste.cleaned_data["command"], default_test=current_test)
        except CommandError as exc:
            paste.add_error("command", str(exc))
        else:
            # Connection options are dropped whole (a target holds them): their placeholders and
            # password warnings are summed up in the notes instead of asking to fill them in.
            proposal = _apply_parsed(initial, parsed)
            parse_report = {"title": f"Read a {parsed.test} command", "warnings": proposal.warnings,
                            "notes": proposal.notes, "placeholders": proposal.placeholders}
    return _render(request, ScenarioForm(instance=scenario, initial=initial), paste, scenario, parse_report)


@role_required(roles.OPERATOR)
def scenario_preset(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """"Load the preset": the chosen seed preset's test, options and dataset in the form."""
    if request.method != "POST":
        return HttpResponseRedirect(_urls(pk)["save"])
    scenario = _scenario(pk)
    initial = _posted_initial(request)
    parse_report: dict[str, Any] | None = None
    preset = PRESETS.get(request.POST.get("preset", ""))
    if preset is not None:
        notes = _apply_preset(initial, preset)
        parse_report = {"title": f"Preset “{preset.label}” loaded", "warnings": [], "notes": notes}
    return _render(request, ScenarioForm(instance=scenario, initial=initial), CommandPasteForm(), scenario,
                   parse_report)


@role_required(roles.OPERATOR)
def scenario_switch(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """"Show this test's options" (clicked by the page's script when the test changes): the form of the chosen
    test, with what was typed kept."""
    if request.method != "POST":
        return HttpResponseRedirect(_urls(pk)["save"])
    scenario = _scenario(pk)
    return _render(request, ScenarioForm(instance=scenario, initial=_posted_initial(request)), CommandPasteForm(),
                   scenario, None)


def _threads_param(text: str) -> str:
    """A thread list from a form or a URL, written the one way ("1, 8, 64"); "" when it is not one."""
    if not text or len(text) > 500:
        return ""
    try:
        return format_thread_list(parse_thread_list(text).values)
    except ThreadListError:
        return ""


def _render(request: HttpRequest, form: ScenarioForm, paste: CommandPasteForm, scenario: Scenario | None,
            parse_report: dict[str, Any] | None) -> HttpResponse:
    return render(request, "campaigns/scenario_form.html", {
        "form": form, "paste": paste, "scenario": scenario, "parse_report": parse_report,
        "pasted_threads": _threads_param(str(form.initial.get("pasted_threads") or "")),
        "test": form.test_spec, "catalogue": SCENARIOS, "urls": _urls(scenario.pk if scenario else None),
    })


def _urls(pk: int | None) -> dict[str, str]:
    """Where the page's form and each of its buttons post: the new scenario's or this scenario's."""
    args = [pk] if pk else []
    return {"save": reverse("scenarios-edit" if pk else "scenarios-new", args=args),
            **{button: reverse(f"scenarios-{button}", args=args) for button in BUTTONS}}
