#!/usr/bin/env python3
"""Writes the registry section of docs/vendors.md from src/inventory/vendors/registry/*.tsv.

The section is the last of the file ("## The registry ..." to the end); `make registry-doc` runs this, and the
unit test `docs_vendors_md_lists_every_row_of_the_registry` fails when a row is missing from it.
"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "src/inventory/vendors/registry"
DOC = ROOT / "docs/vendors.md"
HEADING = "## The registry (generated from `src/inventory/vendors/registry/`, checked by a test)"


def rows(name):
    """The rows of one TSV file, as lists of cells (comments and blank lines skipped)."""
    text = (REGISTRY / name).read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines() if line.strip() and not line.startswith("#")]


def code(cell):
    return f"`{cell}`"


def section():
    vendors = rows("vendors.tsv")
    builtin = {v[0]: v[3] == "builtin" for v in vendors}
    domains = {v[0]: v[4].split(",") for v in vendors}
    resources = rows("resources.tsv")
    labels = rows("labels.tsv")
    out = [
        HEADING,
        "",
        "Every vendor below is a row of `vendors.tsv`; those marked *registry* have no Rust of their own: their resources,",
        "labels and PCI IDs are rows of the other files, each with its source. A new device plugin is a row there and a",
        "fixture. Units: *device* (counted), *partition*, *share* (listed beside the count, never counted as devices),",
        "*core*, *capacity* (memory or compute a sharing layer hands out), *count* (the number of physical devices as a",
        "sharing layer advertises it: the count where no device resource gives one, never added to one). A vendor's",
        "resource that no row names is read as whole devices and noted; a device resource beside a sharing layer's",
        "capacity resource is read as shares. A vendor's labeller's count label wins over its resources (they may count",
        "shares). Regenerate with `make registry-doc`.",
        "",
        "| vendor | read by | resources (unit) | labels (role) | PCI vendor |",
        "|---|---|---|---|---|",
    ]
    for name, display, _word, reader, _domains, pci, _source in vendors:
        own = [r for r in resources if r[1] == name]
        inside = [r for r in own if r[0].split("/")[0] in domains[name]]
        layered = [r for r in own if r not in inside]
        parts = ", ".join(f"{code(r[0])} ({r[2]})" for r in inside)
        if builtin[name] and not inside:
            parts = "its module's rules"
        if layered:
            parts += "; sharing layers' names under their own domains: " + ", ".join(
                f"{code(r[0])} ({r[2]})" for r in layered
            )
        lab = ", ".join(f"{code(l[0])} ({l[2]})" for l in labels if l[1] == name) or "-"
        by = "its module" if reader == "builtin" else "the registry"
        out.append(f"| {code(name)} ({display}) | {by} | {parts or '-'} | {lab} | {pci} |")
    out += [
        "",
        "Sharing layers whose node annotation lists the physical devices (the count is the devices listed, the shares",
        "per device are `sharing.replicas`, a device flagged unhealthy is `GpusUnhealthy` naming it; heartbeats such as",
        "`hami.io/node-handshake` are never read, so they change nothing):",
        "",
        "| annotation | layer | devices of |",
        "|---|---|---|",
    ]
    for key, layer, vendor, _source in rows("sharing_layers.tsv"):
        whose = "the node’s vendor" if vendor == "-" else vendor
        out.append(f"| {code(key)} | {layer} | {whose} |")
    out += [
        "",
        "Node conditions that accelerator health monitors set (`health_conditions.tsv`): at the problem status the node",
        "has `GpuHealthCheckFailed`; a type no row names is never read.",
        "",
        "| condition type | set by | whose devices | problem when |",
        "|---|---|---|---|",
    ]
    for type_, reporter, vendor, problem, by_reason, _source in rows("health_conditions.tsv"):
        whose = "not said" if vendor == "-" else vendor
        if by_reason != "-":
            whose += " (by reason: " + ", ".join(code(rule) for rule in by_reason.split(",")) + ")"
        out.append(f"| {code(type_)} | {reporter} | {whose} | {problem} |")
    never = ", ".join(f"{code(prefix)} ({what})" for prefix, what, _source in rows("not_accelerators.tsv"))
    pci = rows("pci_devices.tsv")
    out += [
        "",
        f"Never accelerators, whatever their domain: {never}.",
        "",
        f"PCI device IDs ({len(pci)} rows, `pci_devices.tsv`) name the model where only an ID is published (AMD's `device-id`",
        "labels, NFD's `pci-<class>_<vendor>_<device>` labels).",
    ]
    return "\n".join(out) + "\n"


def main():
    doc = DOC.read_text(encoding="utf-8")
    head, found, _old = doc.partition("## The registry")
    if not found:
        raise SystemExit(f"{DOC}: no section '## The registry'")
    DOC.write_text(head + section(), encoding="utf-8")


if __name__ == "__main__":
    main()
