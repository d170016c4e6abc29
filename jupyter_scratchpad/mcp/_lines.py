"""An upstream MCP server's stdout read in whole lines: linear in the size of a message.

The SDK's ``stdio_client`` reads a server's stdout through anyio's ``TextReceiveStream`` and, for
every chunk it gets (64 KiB), joins the text it is holding with the chunk and splits it all again:
``(buffer + chunk).split("\\n")``. A message of n bytes then costs O(n² / 64 KiB): a 10 MB tool
result took about a second to arrive, longer than all the proxy does with it (spill, stub).

``LineAlignedText`` gives that loop text that ends at a newline (the rest of a line waits for the
chunk that ends it), so the text it holds between chunks is always empty and reading is linear.
The lines the SDK parses are exactly the same, in the same order; a last line without a newline
is handed over at the end of the stream, as before. ``use_line_aligned_reader`` puts it in place
of the SDK's stream for this process (the proxy's own upstream connections); an SDK that reads
its stdout some other way is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from anyio import EndOfStream
from anyio.streams.text import TextReceiveStream

__all__ = ["LineAlignedText", "use_line_aligned_reader"]


@dataclass(eq=False)
class LineAlignedText(TextReceiveStream):
    """``TextReceiveStream`` whose every chunk but the last ends with a newline."""

    _pending: list[str] = field(init=False, default_factory=list)  # a line's text so far

    async def receive(self) -> str:
        while True:
            try:
                text = await super().receive()
            except EndOfStream:
                if not self._pending:
                    raise
                rest = "".join(self._pending)
                self._pending.clear()
                return rest
            cut = text.rfind("\n") + 1
            if not cut:
                self._pending.append(text)
                continue
            head = text[:cut]
            if self._pending:
                head = "".join(self._pending) + head
                self._pending.clear()
            if cut < len(text):
                self._pending.append(text[cut:])
            return head


def use_line_aligned_reader() -> bool:
    """Read the stdout of every stdio MCP server this process connects to with ``LineAlignedText``.
    False when the SDK no longer reads through anyio's ``TextReceiveStream`` (nothing is changed)."""
    import mcp.client.stdio as stdio

    current = getattr(stdio, "TextReceiveStream", None)
    if current is LineAlignedText:
        return True
    if current is not TextReceiveStream:
        return False
    stdio.TextReceiveStream = LineAlignedText  # type: ignore[attr-defined]
    return True
