"""The results store: every run, its configuration, environment and raw samples."""

from maximus.store.store import ResultsStore, RunRecord, default_results_path

__all__ = ["ResultsStore", "RunRecord", "default_results_path"]
