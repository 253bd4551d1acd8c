"""te_mlir's exceptions. Every failure is an Error; its subclasses say what
kind of failure it is, and `status` is the runtime's status name
("TE_ERROR_SHAPE_MISMATCH", ...), or None for a check made in Python."""

import re

__all__ = ["CompileError", "DTypeError", "DeviceError", "Error",
           "PluginError", "ShapeError"]


class Error(RuntimeError):
    """A te_mlir failure, with the runtime's or the compiler's message."""

    def __init__(self, message, status=None):
        super().__init__(message)
        #: The runtime's status name, e.g. "TE_ERROR_NOT_FOUND", or None.
        self.status = status


class CompileError(Error):
    """A te program did not compile. `diagnostics` holds the compiler's
    messages, `location` the first error's "file:line:col" (None when the
    diagnostics name none)."""

    def __init__(self, message, status="TE_ERROR_COMPILE_FAILED"):
        super().__init__(message, status)
        self.diagnostics = message
        found = re.search(r"(\S+:\d+:\d+): error", message)
        self.location = found.group(1) if found else None


class ShapeError(Error, ValueError):
    """An array's shape is not the one the kernel takes."""


class DTypeError(Error, TypeError):
    """An array's element type is not the one the kernel takes."""


class PluginError(Error):
    """A compiler or runtime plugin could not be loaded or failed."""


class DeviceError(Error):
    """A device could not be opened, ran out of memory, or a kernel on it
    failed (a run-time check refused its data, or a library call failed)."""
