"""Test helpers that run real servers: no mocks of Python code."""

from .server import FakeOpenAI, Fault, ScriptedReplies

__all__ = ["FakeOpenAI", "Fault", "ScriptedReplies"]
