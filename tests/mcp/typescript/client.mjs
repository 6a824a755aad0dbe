// An MCP client on the TypeScript SDK (the client of Claude Desktop and Claude Code), driven by
// tests/mcp/test_typescript_client.py.
//
//   node client.mjs COMMAND [ARG...] < script.json
//
// Starts COMMAND as an MCP server over stdio (as a client's config does), initializes, lists the
// tools, resources and prompts, then makes the script's calls in order and prints one JSON
// object: what the server said of itself, the tools, and each call's outcome. A call the SDK
// rejects (a result it finds invalid, an unknown tool) is recorded as `thrown` with the
// McpError's code and message, never a crash of this script: the test decides what is right.
//
// script.json: {"calls": [{"name": TOOL, "arguments": {...}}, ...]}

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
}

function thrown(error) {
  return { code: error?.code ?? null, message: String(error?.message ?? error) };
}

async function main() {
  const [command, ...args] = process.argv.slice(2);
  if (!command) throw new Error("usage: node client.mjs COMMAND [ARG...] < script.json");
  const script = await readStdin();

  const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  const client = new Client({ name: "hypd-typescript-test-client", version: "1.0.0" });
  await client.connect(transport);

  const out = {
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions() ?? null,
  };
  // listTools also caches each tool's output schema: callTool then checks results against it.
  out.tools = (await client.listTools()).tools;
  const capabilities = out.capabilities ?? {};
  out.resources = capabilities.resources ? (await client.listResources()).resources : null;
  out.prompts = capabilities.prompts ? (await client.listPrompts()).prompts : null;

  out.calls = [];
  for (const call of script.calls ?? []) {
    const outcome = { name: call.name };
    try {
      const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} });
      outcome.result = result;
    } catch (error) {
      outcome.thrown = thrown(error);
    }
    out.calls.push(outcome);
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(`client.mjs: ${error?.stack ?? error}\n`);
  process.exit(1);
});
