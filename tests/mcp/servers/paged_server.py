"""A low-level MCP server (the official SDK's ``Server``) that pages every listing and names its
tools the way that trips a proxy: for the proxy's listing, naming and error-bounding tests.

- ``tools/list``: 23 tools, 5 per page: ``tool_00``..``tool_20``, ``grep`` (one of the
  scratchpad's names) and ``paged__grep`` (what the proxy would rename ``grep`` to);
- ``prompts/list``: 7 prompts, 3 per page; ``resources/list``: 7 resources, 4 per page (one a
  2.6 MB log);
- ``resources/templates/list``: ``paged://item/{id}``, read as ``item <id>``;
- ``resources/read`` of an unknown URI and ``prompts/get`` of ``broken`` fail with a
  100,000-character message. Run as ``python paged_server.py`` (stdio).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

NAMES = [f"tool_{i:02d}" for i in range(21)] + ["grep", "paged__grep"]
TOOLS = [types.Tool(name=n, description=f"says {n}", input_schema={"type": "object"}) for n in NAMES]
PROMPTS = [types.Prompt(name=n) for n in ("p0", "p1", "p2", "p3", "p4", "p5", "broken")]
RESOURCES = [types.Resource(name=f"r{i}", uri=f"paged://r{i}") for i in range(6)]
RESOURCES.append(types.Resource(name="log", uri="paged://log"))  # 2.6 MB of text
LOG = "\n".join(f"2026-12-05T10:00:{i % 60:02d} request {i} served in {i % 97} ms" for i in range(60_000))


def page(items: list[Any], params: Any, size: int) -> tuple[list[Any], str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    return items[start : start + size], (str(start + size) if start + size < len(items) else None)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    tools, cursor = page(TOOLS, params, 5)
    return types.ListToolsResult(tools=tools, next_cursor=cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"this is {params.name}")])


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    prompts, cursor = page(PROMPTS, params, 3)
    return types.ListPromptsResult(prompts=prompts, next_cursor=cursor)


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name == "broken":
        raise MCPError(code=types.INTERNAL_ERROR, message="the prompt broke: " + "x" * 100_000)
    text = types.TextContent(type="text", text=f"prompt {params.name}")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    resources, cursor = page(RESOURCES, params, 4)
    return types.ListResourcesResult(resources=resources, next_cursor=cursor)


async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(name="item", uri_template="paged://item/{id}", description="one item")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri.startswith("paged://item/"):
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=f"item {uri.removeprefix('paged://item/')}")]
        )
    if uri not in {str(r.uri) for r in RESOURCES}:
        raise MCPError(code=types.INVALID_PARAMS, message="no such resource: " + "z" * 100_000)
    text = LOG if uri == "paged://log" else f"contents of {uri}"
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text)])


server = Server(
    "paged",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_list_resource_templates=list_resource_templates,
)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
