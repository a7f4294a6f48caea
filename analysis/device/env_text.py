"""out/env.txt: §1's environment (results/env.json, built by analysis.device.environment) as a
few headed blocks of aligned `key: value` lines for people."""

from __future__ import annotations

from analysis.device.health import UNAVAILABLE
from analysis.device.nvme_ns import describe_namespace


def _bytes(n: int | None) -> str | None:
    """Decimal units as vendors quote capacity, with the exact count."""
    if n is None:
        return None
    for unit, size in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n:,} bytes)"
    return f"{n} bytes"


def _block(title: str, rows: list[tuple[str, object]]) -> list[str]:
    rows = [(k, v) for k, v in rows if v not in (None, "", [], {})]
    width = max((len(k) for k, _ in rows), default=0) + 1
    return [title] + [f"  {k + ':':<{width}} {v}" for k, v in rows] + [""]


def _cpu_text(cpu: dict) -> str | None:
    if not cpu.get("model") and not cpu.get("logical_cpus"):
        return None
    parts = [f"{cpu.get('logical_cpus') or '?'} logical CPUs"]
    if cpu.get("cores"):
        parts.append(f"{cpu['cores']} cores in {cpu.get('sockets') or '?'} socket(s)")
    if cpu.get("numa_nodes"):
        parts.append(f"{cpu['numa_nodes']} NUMA node(s)")
    return f"{cpu.get('model') or 'unknown model'}, " + ", ".join(parts)


def _link_text(link: dict) -> str:
    """'8.0 GT/s PCIe x4 (max 8.0 GT/s PCIe x4) at 0000:01:00.0'; a slot whose link the kernel
    reads as 'Unknown' (QEMU's, a VM's virtual slot) is said to report none."""
    if not link.get("width") or "GT/s" not in str(link.get("speed")):
        return (f"not reported (speed {link.get('speed') or '?'}, width "
                f"{link.get('width') if link.get('width') is not None else '?'}: an emulated or "
                f"virtual slot) at {link['pci_device']}")
    return (f"{link['speed']} x{link['width']} (max {link['max_speed']} x{link['max_width']}) "
            f"at {link['pci_device']}")


def _target_rows(t: dict) -> list[tuple[str, object]]:
    link = t.get("pcie_link")
    mount = t.get("mounted")
    kind = t.get("type")
    if kind == "file" and t.get("to_be_created"):
        kind = "file to be created by the first section (full of random data)"
    if t.get("type") == "file" and t.get("device"):
        kind = f"{kind} on {t['device']} ({t.get('device_type') or '?'})"
    return [
        ("path", t.get("path")),
        ("resolved", t.get("resolved") if t.get("resolved") != t.get("path") else None),
        ("nearest existing", t.get("existing_parent")),
        ("type", kind),
        ("device", t.get("device") if t.get("type") != "file" else None),
        ("parent disk", t.get("parent_disk") if t.get("parent_disk") != t.get("device") else None),
        ("transport", t.get("transport")),
        ("model", t.get("model") or "unknown"),
        ("serial", t.get("serial")),
        ("firmware", t.get("firmware")),
        ("capacity", _bytes(t.get("capacity_bytes"))),
        ("file size", _bytes(t.get("file_size_bytes"))),
        ("block size", f"logical {t.get('logical_block_size')} B, "
         f"physical {t.get('physical_block_size')} B" if t.get("logical_block_size") else None),
        *describe_namespace(t.get("namespace")),
        ("scheduler", t.get("scheduler") or ("n/a (no queue/scheduler: bio-based device)"
                                             if t.get("device") else None)),
        ("rotational", {True: "yes", False: "no"}.get(t.get("rotational"))),
        ("write cache", t.get("write_cache")),
        ("NUMA node", None if t.get("numa_node") is None else
         f"{t['numa_node']}{' (no affinity reported)' if t['numa_node'] < 0 else ''}"),
        ("PCIe link", _link_text(link) if link else
         "none (no PCIe link above the device in sysfs)" if t.get("device") else None),
        ("interrupt CPUs", "{} of {}".format(",".join(map(str, t["irq_cpus"][0])) or "none yet",
                                              t["irq_cpus"][1]) if t.get("irq_cpus") else None),
        ("loop backing", t.get("loop_backing_file")),
        ("mounted", f"{mount['where']} ({mount['fstype']}, {mount['source']})" if mount else
         "no" if t.get("device") else None),
    ]


def _spare(h: dict) -> str | None:
    """Available spare beside its threshold, the level below which the drive warns: a spare of
    0 % means little without it (QEMU reports 0 % against a threshold of 0 %)."""
    spare, threshold = h.get("available_spare"), h.get("available_spare_threshold")
    if spare is None:
        return None
    if "available_spare_threshold" not in h:  # an env.json written before it was kept
        return f"{spare} % (threshold not recorded)"
    return f"{spare} % " + (f"(threshold {threshold} %)" if threshold is not None
                            else "(the drive reports no threshold)")


def _health_rows(h: dict) -> list[tuple[str, object]]:
    def num(key, unit=""):
        return None if h.get(key) is None else f"{h[key]:,}{unit}"

    thermal = [h.get(f"thermal_management_t{n}_trans_count") for n in (1, 2)]
    return [
        ("source", f"{h.get('source')} ({h.get('device')})"),
        ("SMART overall", None if h.get("smart_passed") is None else
         ("passed" if h["smart_passed"] else "FAILED")),
        ("critical warning", None if h.get("critical_warning") is None
         else f"0x{h['critical_warning']:02x}"),
        ("temperature", num("temperature_c", " °C")),
        ("percentage used", num("percentage_used", " %")),
        ("available spare", _spare(h)),
        ("host reads", _bytes(h.get("host_read_bytes"))),
        ("host writes", _bytes(h.get("host_written_bytes"))),
        ("byte counters", h.get("host_bytes_basis")),
        ("media errors", num("media_errors")),
        ("error log entries", num("error_log_entries")),
        ("power-on hours", num("power_on_hours")),
        ("power cycles", num("power_cycles")),
        ("unsafe shutdowns", num("unsafe_shutdowns")),
        ("time above warn temp", num("warning_temp_time_min", " min")),
        ("time above crit temp", num("critical_comp_time_min", " min")),
        ("thermal throttling", None if thermal[0] is None else
         f"T1 {thermal[0]} times ({h.get('thermal_management_t1_total_time_s')} s), "
         f"T2 {thermal[1]} times ({h.get('thermal_management_t2_total_time_s')} s)"
         + (" (counters the drive does not keep: HCTMA bit 0 clear)"
            if h.get("thermal_management") is False else "")),
        ("smartctl exit bits", "; ".join(h.get("smartctl_exit_bits") or []) or None),
    ]


def render_env_text(env: dict) -> str:
    """out/env.txt: a few headed blocks of aligned `key: value` lines."""
    engines = ", ".join(f"{k}={v}" for k, v in (env.get("engines") or {}).items())
    tools = env.get("tools") or {}
    memory = env.get("memory_bytes")
    health = env.get("health") or {}
    when, host = env.get("collected_at") or "?", env.get("hostname") or "?"
    lines = [f"Environment captured {when} on {host}", ""]
    lines += _block("Machine", [
        ("kernel", env.get("kernel")),
        ("distribution", env.get("distribution")),
        ("cpu", _cpu_text(env.get("cpu") or {})),
        ("governor", env.get("governor")),
        ("memory", f"{memory / 2**30:.1f} GiB ({memory:,} bytes)" if memory else None),
    ])
    lines += _block("Software", [
        ("fio", env.get("fio_version")),
        ("engines", engines or None),
        ("O_DIRECT", env.get("direct_io")),
        ("smartctl", tools.get("smartctl")),
        ("nvme-cli", tools.get("nvme-cli")),
    ])
    if env.get("fleet"):
        # Targets and health are each host's own (env.bash there): only where they are.
        lines += ["Fleet hosts (each measures its own target)"]
        lines += [f"  {host}" for host in env["fleet"]] + [""]
    else:
        lines += _block("Target", _target_rows(env.get("target") or {}))
        if health.get("available"):
            lines += _block("Device health", _health_rows(health))
        else:
            why = (health.get("reason") or "").removeprefix(UNAVAILABLE).lstrip(": ")
            lines += ["Device health", f"  {UNAVAILABLE} ({why or 'no reason recorded'})", ""]
    warnings = env.get("warnings") or []
    lines += ["Warnings"] + ([f"  - {w}" for w in warnings] or ["  none"])
    return "\n".join(lines).rstrip() + "\n"


def _health_line(h: dict) -> str:
    """The health a report reader checks first, on one line; every counter is in env.txt."""
    if not h.get("available"):
        why = (h.get("reason") or "").removeprefix(UNAVAILABLE).lstrip(": ")
        return f"{UNAVAILABLE} ({why or 'no reason recorded'})"
    values = dict(_health_rows(h))
    parts = [("SMART", values.get("SMART overall")),
             ("critical warning", values.get("critical warning")),
             ("", values.get("temperature")), ("used", values.get("percentage used")),
             ("spare", values.get("available spare")),
             ("media errors", values.get("media errors")),
             ("error log entries", values.get("error log entries"))]
    return ", ".join(f"{k} {v}" if k else str(v) for k, v in parts if v is not None)


def render_env_summary(env: dict) -> str:
    """§1 in the report: what identifies the machine, the software and the drive, and the drive's
    health, a line each; out/env.txt (render_env_text) keeps every field.

    >>> print(render_env_summary({"collected_at": "2026-11-29T02:34:25Z", "hostname": "lab1",
    ...     "kernel": "Linux 6.1.0-56-amd64 #1 SMP x86_64 GNU/Linux", "fio_version": "fio-3.33",
    ...     "engines": {"io_uring": "ok", "psync": "ok"}, "target": {"path": "/dev/sdb",
    ...     "model": "X1", "firmware": "F2", "capacity_bytes": 2 * 10**12, "transport": "sata"},
    ...     "health": {"available": True, "smart_passed": True, "temperature_c": 40}}))
    captured 2026-11-29T02:34:25Z on lab1; every field: out/env.txt, results/env.json
      machine:  Linux 6.1.0-56-amd64
      software: fio-3.33 (engines io_uring=ok, psync=ok)
      target:   /dev/sdb: X1, firmware F2, 2.0 TB (2,000,000,000,000 bytes), sata
      health:   SMART passed, 40 °C
    """
    t = env.get("target") or {}
    tools = env.get("tools") or {}
    memory = env.get("memory_bytes")
    cpu = env.get("cpu") or {}
    machine = [" ".join((env.get("kernel") or "").split()[:2]), env.get("distribution"),
               cpu.get("model") and f"{cpu['model']} ({cpu.get('logical_cpus') or '?'} CPUs)",
               memory and f"{memory / 2**30:.1f} GiB"]
    engines = ", ".join(f"{k}={v}" for k, v in (env.get("engines") or {}).items())
    software = [env.get("fio_version"), engines and f"(engines {engines})",
                tools.get("smartctl") and f"smartctl {tools['smartctl']}",
                tools.get("nvme-cli") and f"nvme-cli {tools['nvme-cli'].removeprefix('nvme version ')}"]
    rows = dict(_target_rows(t))
    target = [rows.get("model") and f"{t.get('path')}: {rows['model']}",
              t.get("firmware") and f"firmware {t['firmware']}", rows.get("capacity"),
              t.get("transport"), rows.get("write cache") and f"write cache {rows['write cache']}",
              rows.get("scheduler") and f"scheduler {rows['scheduler']}",
              t.get("mounted") and f"mounted at {rows['mounted']}"]
    lines = [(f"captured {env.get('collected_at') or '?'} on {env.get('hostname') or '?'}; "
              "every field: out/env.txt, results/env.json")]
    blocks = [("machine", ", ".join(p for p in machine if p)),
              ("software", " ".join(p for p in software[:2] if p)
               + "".join(f", {p}" for p in software[2:] if p)),
              ("target", ", ".join(p for p in target if p)),
              ("link", rows.get("PCIe link") if t.get("pcie_link") else None)]
    if env.get("fleet"):
        blocks = blocks[:2] + [("hosts", ", ".join(env["fleet"]))]
    else:
        blocks.append(("health", _health_line(env.get("health") or {})))
    lines += [f"  {k + ':':<9} {v}" for k, v in blocks if v]
    return "\n".join(lines)
