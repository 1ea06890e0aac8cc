"""Per-question energy and emissions with CodeCarbon's offline tracker, plus the thesis's derived
sustainability metrics (§2.6.4, spec §9).

Without RAPL power counters (most VMs and containers) CodeCarbon *estimates* CPU power from a TDP
guess and load; every record carries ``energy_measured`` so estimated numbers are never passed off as
measurements.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

RAPL_DIR = Path("/sys/class/powercap/intel-rapl")


def rapl_available() -> bool:
    try:
        return any(os.access(p / "energy_uj", os.R_OK) for p in RAPL_DIR.glob("intel-rapl:*"))
    except OSError:
        return False


@dataclass
class EmissionsRecord:
    emissions: float | None = None  # kg CO2e
    cpu_energy_consumption: float | None = None  # kWh
    gpu_energy_consumption: float | None = None
    ram_energy_consumption: float | None = None
    total_energy_consumption: float | None = None
    tracking_duration: float | None = None
    energy_measured: bool = False


class CarbonTracker:
    """One OfflineEmissionsTracker per run; one CodeCarbon *task* per question."""

    def __init__(self, country_iso_code: str = "DEU", enabled: bool = True, output_dir: str | None = None) -> None:
        self.enabled = enabled
        self.measured = rapl_available()
        self._tracker = None
        if not enabled:
            return
        logging.getLogger("codecarbon").setLevel(logging.ERROR)
        try:
            from codecarbon import OfflineEmissionsTracker

            self._tracker = OfflineEmissionsTracker(
                country_iso_code=country_iso_code, save_to_file=False, log_level="error",
                measure_power_secs=1, output_dir=output_dir or ".", tracking_mode="process",
            )
            self._tracker.start()
        except Exception as exc:  # carbon tracking must never stop an experiment
            logging.getLogger(__name__).warning("CodeCarbon unavailable: %s", exc)
            self._tracker = None

    def start(self, name: str) -> None:
        if self._tracker is not None:
            try:
                self._tracker.start_task(name)
            except Exception:
                self._tracker = None

    def stop(self, name: str) -> EmissionsRecord:
        if self._tracker is None:
            return EmissionsRecord()
        try:
            d = self._tracker.stop_task(name)
        except Exception:
            return EmissionsRecord()
        return EmissionsRecord(
            emissions=float(d.emissions), cpu_energy_consumption=float(d.cpu_energy),
            gpu_energy_consumption=float(d.gpu_energy), ram_energy_consumption=float(d.ram_energy),
            total_energy_consumption=float(d.energy_consumed), tracking_duration=float(d.duration),
            energy_measured=self.measured,
        )

    def close(self) -> EmissionsRecord | None:
        """Stop the run-level tracker and return its totals (robust even when single questions are shorter
        than CodeCarbon's sampling interval and their task records read 0)."""
        if self._tracker is None:
            return None
        rec = None
        try:
            self._tracker.stop()
            d = self._tracker.final_emissions_data
            rec = EmissionsRecord(
                emissions=float(d.emissions), cpu_energy_consumption=float(d.cpu_energy),
                gpu_energy_consumption=float(d.gpu_energy), ram_energy_consumption=float(d.ram_energy),
                total_energy_consumption=float(d.energy_consumed), tracking_duration=float(d.duration),
                energy_measured=self.measured,
            )
        except Exception:
            rec = None
        self._tracker = None
        return rec


def sustainability(systems: dict[str, tuple[float, float]]) -> dict[str, dict[str, float]]:
    """Thesis sustainability metrics for systems {name: (performance e.g. Recall, CE per question)}.

    CE_rel = CE / Perf; ΔCE = (Perf − Perf_base)·CE_base / CE with base = the lowest-performing system;
    n(CE) and n(CE_rel) min-max normalised so 1 = lowest emissions and 0 = highest.
    """
    if not systems:
        return {}
    base_name = min(systems, key=lambda n: systems[n][0])
    perf_base, ce_base = systems[base_name]
    ce_vals = [ce for _, ce in systems.values()]
    rel = {n: (ce / p if p else float("inf")) for n, (p, ce) in systems.items()}
    rel_finite = [v for v in rel.values() if v != float("inf")]

    def norm(v: float, lo: float, hi: float) -> float:
        return 1.0 if hi == lo else 1.0 - (v - lo) / (hi - lo)

    out = {}
    for n, (p, ce) in systems.items():
        out[n] = {
            "CE": ce,
            "CE_rel": rel[n],
            "delta_CE": (p - perf_base) * ce_base / ce if ce else float("nan"),
            "n_CE": norm(ce, min(ce_vals), max(ce_vals)),
            "n_CE_rel": norm(rel[n], min(rel_finite), max(rel_finite)) if rel[n] != float("inf") else 0.0,
            "is_base": float(n == base_name),
        }
    return out
