"""The agent's memory served to other agents over MCP: `python -m mettaclaw.mcp [key=value ...]`.

`tools.py` holds the tools, `server.py` the MCP server and its transports (stdio, and streamable HTTP
on loopback behind a bearer token).
"""
