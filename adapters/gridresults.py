"""A finished grid run, read back: what the statistics, the GRID cards and ``crosspkg`` consume.

:meth:`GridResults.load` reads a run as it is on disk; the commands read it only through
``gridverify.open_verified``, which hands it over when ``verify`` finds it intact (a score read
from an edited folder would carry a configuration that did not produce it). It gives the frozen
plan, ``cells.parquet``, each cell's item records, and for every model request the logged
response's time, model identity and library versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ConfigError
from .gridlayout import CELLS_TABLE, EVENTS, PLAN, REPEAT_FOLDER
from .gridplan import CellRequests, GridPlan
from .grid import build_grid
from .records import ItemRecord


@dataclass
class GridResults:
    folder: Path
    frozen: dict[str, Any]
    """The frozen plan (``plan.json``)."""
    prepared: GridPlan
    """The plan's cells and requests, prepared again from the data (items, exemplars, templates)."""
    table: pd.DataFrame
    """``cells.parquet``: one row per cell x metric."""
    events: dict[str, dict[str, Any]]
    """Request key -> the logged entry body (request, response, utc, model, versions)."""
    log_sha256: str
    """The log's final chain hash: with the plan hash, the run's anchor (``verify --expect``)."""
    _records: dict[str, list[ItemRecord]] = field(default_factory=dict)
    _prereg: dict[str, Any] | None = None

    @classmethod
    def load(cls, folder: Path, prepared: GridPlan | None = None) -> GridResults:
        """The run as it is on disk, unverified (``verify`` itself reads it this way); ``prepared``:
        its plan already prepared."""
        frozen = json.loads((folder / PLAN).read_text())
        if prepared is None:
            prepared = GridPlan(frozen, build_grid(frozen["grid"], source=str(folder / PLAN)), None)
        events, last = {}, ""
        with open(folder / EVENTS, encoding="utf-8") as handle:
            next(handle)  # the header
            for line in handle:
                entry = json.loads(line)
                events[entry["key"]] = entry["body"]
                last = entry["sha256"]
        return cls(folder, frozen, prepared, pd.read_parquet(folder / CELLS_TABLE), events, last)

    @property
    def cells(self) -> list[dict[str, Any]]:
        return self.frozen["cells"]

    def cell(self, cell_id: str) -> dict[str, Any]:
        for cell in self.cells:
            if cell["cell_id"] == cell_id:
                return cell
        raise ConfigError(f"{cell_id!r} is not a cell of {self.folder}",
                          f"use a folder name under {self.folder / 'cells'}")

    def requests(self, cell_id: str) -> CellRequests:
        return self.prepared.cells[self.cell(cell_id)["index"]]

    def request_keys(self, cell_id: str) -> list[str]:
        """The unique model requests this cell's results rest on (shared ones included)."""
        return self.requests(cell_id).keys()

    def records(self, cell_id: str) -> list[ItemRecord]:
        if cell_id not in self._records:
            lines = (self.folder / "cells" / self.cell(cell_id)["cell_id"] / "records.jsonl").read_text().splitlines()
            self._records[cell_id] = [ItemRecord.model_validate_json(line) for line in lines]
        return self._records[cell_id]

    def repeat_records(self, cell_id: str) -> list[ItemRecord]:
        """A repeated cell's second measurement (the repeat gate's ``cells/<id>/repeat/``)."""
        path = self.folder / "cells" / self.cell(cell_id)["cell_id"] / REPEAT_FOLDER / "records.jsonl"
        return [ItemRecord.model_validate_json(line) for line in path.read_text().splitlines()]

    def preregistration(self) -> dict[str, Any]:
        """What the run says of its preregistration (:func:`.prereg.status`, against the log's
        earliest request), read once: every GRID card and ``stats`` ask."""
        from .prereg import status

        if self._prereg is None:
            first = min((body["utc"] for body in self.events.values()), default=None)
            self._prereg = status(self.folder, first)
        return self._prereg

    def primary(self) -> pd.DataFrame:
        """One row per cell: the benchmark's primary metric as ``score`` (with its CI), every factor a column."""
        rows = self.table[self.table["primary"]].rename(columns={"value": "score"})
        return rows.reset_index(drop=True)
