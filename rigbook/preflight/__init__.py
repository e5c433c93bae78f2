"""Preflight: a recipe checked against a rig gives findings with stable codes."""
