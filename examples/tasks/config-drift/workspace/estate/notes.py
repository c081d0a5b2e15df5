"""Helpers for estate/reconcile.py."""
