"""Reasoning over truth-valued atoms: NAL `|-` and PLN `|~` from lib/nal.metta and lib/pln.metta.

Modules: ``atoms`` (parse and check beliefs), ``fast`` (rules compiled once from the MeTTa files),
``interpreted`` (the same rules run by hyperon, the reference), ``infer`` (forward chaining with proof
trails), ``skills`` (the agent's `nal`, `pln` and `infer` skills).  Nothing is imported eagerly.
"""
