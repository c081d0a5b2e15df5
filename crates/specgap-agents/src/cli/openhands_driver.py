"""specgap's driver of OpenHands (cli:openhands; docs/adapters.md "cli:openhands").

Runs OpenHands' own agent (openhands-sdk and openhands-tools, the default agent of its CLI
mode: terminal, file editor, task tracker, its condenser, no browser) in the workspace with
its local workspace (no container), against the episode's gateway, for one start:

* the first start sends the opening message, a resume loads the persisted conversation and
  sends the harness's message (the customer's answers) as the user's next message;
* the whole conversation runs at most SPECGAP_OH_MAX_STEPS agent steps (200, seed 002
  App. A.9: OpenHands' max_iterations), counted across starts;
* when the agent stops with a message instead of its finish tool, the driver ends and the
  harness answers that message (the user-response callback of seed 002 App. A.9.3, served
  by the engine's text exchange), then starts it again;
* what happened is written to ~/.specgap/openhands-result.json and each tool observation to
  ~/.specgap/openhands-events-<start>.jsonl for the harness to read.

The environment names everything: SPECGAP_OH_MODEL, SPECGAP_OH_BASE_URL, OPENAI_API_KEY,
SPECGAP_OH_MESSAGE_FILE, SPECGAP_OH_START, SPECGAP_OH_MAX_STEPS, SPECGAP_OH_MCP_CONFIG,
SPECGAP_OH_MODEL_ARGS (JSON).
"""

import json
import os
import sys
import uuid

HOME = os.environ.get("HOME", "/home/specgap")
STATE = os.path.join(HOME, ".specgap")
PERSIST = os.path.join(STATE, "openhands")
CONVERSATION_FILE = os.path.join(STATE, "openhands-conversation")
STEPS_FILE = os.path.join(STATE, "openhands-steps")
RESULT_FILE = os.path.join(STATE, "openhands-result.json")


def read(path, default=""):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    from openhands.sdk import LLM, Conversation
    from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
    from openhands.sdk.tool.builtins.finish import FinishAction
    from openhands.tools.preset.default import get_default_agent

    start = int(os.environ.get("SPECGAP_OH_START", "1"))
    max_steps = int(os.environ.get("SPECGAP_OH_MAX_STEPS", "200"))
    message = read(os.environ["SPECGAP_OH_MESSAGE_FILE"])
    model_args = json.loads(os.environ.get("SPECGAP_OH_MODEL_ARGS") or "{}")
    llm_fields = {k: v for k, v in model_args.items() if k in LLM.model_fields}
    llm = LLM(
        model="openai/" + os.environ["SPECGAP_OH_MODEL"],
        base_url=os.environ["SPECGAP_OH_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        usage_id="agent",
        **llm_fields,
    )
    agent = get_default_agent(llm=llm, cli_mode=True)
    mcp = json.loads(read(os.environ.get("SPECGAP_OH_MCP_CONFIG", ""), "{}") or "{}")
    if mcp.get("mcpServers"):
        servers = {}
        for name, server in mcp["mcpServers"].items():
            servers[name] = {k: v for k, v in server.items() if k in ("command", "args", "env")}
        # Validated as the agent's own field (name -> stdio server), not copied in raw.
        agent = type(agent).model_validate({**agent.model_dump(), "mcp_config": servers})

    used = int(read(STEPS_FILE, "0").strip() or "0")
    left = max_steps - used
    os.makedirs(PERSIST, exist_ok=True)
    conversation_id = read(CONVERSATION_FILE).strip()
    if not conversation_id:
        conversation_id = str(uuid.uuid4())
        write(CONVERSATION_FILE, conversation_id)
    events_log = open(os.path.join(STATE, f"openhands-events-{start}.jsonl"), "a", encoding="utf-8")

    def on_event(event):
        if isinstance(event, ObservationEvent):
            text = "".join(getattr(c, "text", "") for c in event.observation.to_llm_content)
            record = {"kind": "observation", "tool_call_id": event.tool_call_id, "tool": event.tool_name, "text": text}
            events_log.write(json.dumps(record) + "\n")
            events_log.flush()

    result = {"start": start, "steps_before": used, "max_steps": max_steps}
    if left <= 0:
        result.update(status="step_limit", steps=used, final_text=None, finished=False)
        write(RESULT_FILE, json.dumps(result))
        return 0
    conversation = Conversation(
        agent=agent,
        workspace=os.getcwd(),
        persistence_dir=PERSIST,
        conversation_id=uuid.UUID(conversation_id),
        callbacks=[on_event],
        max_iteration_per_run=left,
        visualizer=None,
        delete_on_close=False,
    )
    before = len(conversation.state.events)
    conversation.send_message(message)
    error = None
    try:
        conversation.run()
    except Exception as e:  # the harness records why the run stopped
        error = f"{type(e).__name__}: {e}"
    events = list(conversation.state.events)[before:]
    responses = {e.llm_response_id for e in events if isinstance(e, ActionEvent)}
    texts = [e for e in events if isinstance(e, MessageEvent) and e.source == "agent"]
    steps = used + len(responses) + len(texts)
    write(STEPS_FILE, str(steps))
    finish = next((e for e in reversed(events) if isinstance(e, ActionEvent) and isinstance(e.action, FinishAction)), None)
    final_text = None
    if finish is not None:
        final_text = finish.action.message
    elif texts:
        final_text = "".join(getattr(c, "text", "") for c in texts[-1].llm_message.content)
    status = str(getattr(conversation.state.execution_status, "value", conversation.state.execution_status))
    result.update(status=status, steps=steps, finished=finish is not None, final_text=final_text, error=error)
    write(RESULT_FILE, json.dumps(result))
    events_log.close()
    conversation.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
