//! Integration tests of the bridge library: the endpoint over a real Unix socket, the client
//! and commands against it, and the MCP server over an in-memory pipe.

mod endpoint;
mod mcp;
