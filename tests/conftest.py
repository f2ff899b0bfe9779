"""Fixtures shared by every test folder."""

from tests.fakes.planted_module import planted_module

__all__ = ["planted_module"]
