"""Importers: other people's files as trajectories.

    from agentdebug.io import import_file, import_paths
    runs = import_file("run.json")                 # format detected
    batch = import_paths(["traces/"])              # folders, going on past bad files
    for path, why in batch.failures: print(why)
    ingest_paths(["traces/"], store)                # the same, saved into a store

Built-in formats, in the order auto-detection tries them (most specific first):
``whowhen``, ``trail``, ``otlp``, ``messages``, ``phoenix``, ``events``. Plugins add more
through the ``agentdebug_importers`` hook.
"""

from __future__ import annotations

from agentdebug.io.batch import (
    IMPORT_SUFFIXES,
    BatchImport,
    RunIds,
    expand_paths,
    import_paths,
    ingest_paths,
    save_imported,
)
from agentdebug.io.detect import detect_importer, import_file, import_source, stamped
from agentdebug.io.events import EventsImporter
from agentdebug.io.messages import MessagesImporter
from agentdebug.io.otlp import OtlpImporter
from agentdebug.io.phoenix import PhoenixImporter
from agentdebug.io.source import parse_bytes, read_source
from agentdebug.io.trail import TrailImporter, load_trail_annotations
from agentdebug.io.whowhen import WhoWhenImporter
from agentdebug.stages import Importer
from agentdebug.store.base import IMPORTED_FROM


def builtin_importers() -> list[Importer]:
    """The built-in importers, in the order auto-detection should try them."""
    return [
        WhoWhenImporter(),
        TrailImporter(),
        OtlpImporter(),
        MessagesImporter(),
        PhoenixImporter(),
        EventsImporter(),
    ]


__all__ = [
    "IMPORTED_FROM",
    "IMPORT_SUFFIXES",
    "BatchImport",
    "EventsImporter",
    "MessagesImporter",
    "OtlpImporter",
    "PhoenixImporter",
    "RunIds",
    "TrailImporter",
    "WhoWhenImporter",
    "builtin_importers",
    "detect_importer",
    "expand_paths",
    "import_file",
    "import_paths",
    "import_source",
    "ingest_paths",
    "load_trail_annotations",
    "parse_bytes",
    "read_source",
    "save_imported",
    "stamped",
]
