"""Start the agent: config -> stores -> model -> runner -> loop.

    python run.py [key=value ...]      e.g. python run.py provider=scripted scriptFile=demo.txt
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

# this checkout's package first: another checkout installed in the environment would otherwise bring
# its own project folder (its memory, skills and priors) with it
sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from mettaclaw import entry  # noqa: E402

entry.offline()

from mettaclaw.channels import make_channel  # noqa: E402
from mettaclaw.config import ConfigError, settings_table  # noqa: E402
from mettaclaw.llm import Console, OpenAICompatible, make_llm  # noqa: E402
from mettaclaw.skills.shell import confinement  # noqa: E402


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help", "help") for arg in argv):
        print(__doc__.strip().splitlines()[0] + "\n\n    python run.py [name=value ...]\n\n" + settings_table())
        return 0
    config = entry.load(argv)
    if config is None:
        return 2
    memory_dir = entry.log_to(config, "agent.log")
    if memory_dir is None:
        return 2
    from mettaclaw.runtime import Agent

    channel = make_channel(config)
    read_line = getattr(channel, "read_model_line", lambda: sys.stdin.readline().rstrip("\n") or None)
    try:
        llm = make_llm(config, read_line, notice=print)                              # model
        dream_llm = (make_llm(config, read_line, lambda _: None)  # its own client; the notices were said once
                     if isinstance(llm, OpenAICompatible) else None)
    except ConfigError as err:  # a provider without its key or script: the user's to fix
        print(f"config error: {err}", file=sys.stderr)
        getattr(channel, "close", lambda: None)()
        return 2
    memory = entry.open_memory(config, llm=dream_llm, progress=True)                 # stores
    if memory is None:
        getattr(channel, "close", lambda: None)()
        return 2
    # Ctrl-C asks the agent to stop instead of raising KeyboardInterrupt wherever the main thread
    # is: inside a hyperon callback that exception aborted the whole process (a Rust panic). SIGTERM
    # (a service manager, `docker stop`) stops it the same way, so the memory is closed, not abandoned.
    stopping = threading.Event()
    for ending in (signal.SIGINT, signal.SIGTERM):
        signal.signal(ending, lambda *_: stopping.set())
    inspector = None
    try:
        if config.ui:
            from mettaclaw.inspector import InspectorError, serve

            try:
                inspector = serve(memory, config)
            except InspectorError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            print(f"inspector: {inspector.url}", flush=True)
        agent = Agent(config, llm, channel, memory)                                  # runner
        agent.stopping = stopping
        print(memory.priors.summary())
        print(confinement(confine_files=not config.allowOutsideWorkspace))
        you = ("You are the model: at each prompt type skill lines (send hello, remember ..., query ...)"
               if isinstance(llm, Console) else "Type a message")
        print(f"mettaclaw is running (model: {llm.name}, memory: {memory_dir}). {you}; Ctrl-D or Ctrl-C ends.", flush=True)
        if agent.skills_notice:
            print(f"warning: {agent.skills_notice}", file=sys.stderr)
        for error in agent.skill_errors:
            print(f"skill file not loaded: {error}", file=sys.stderr)
        try:
            agent.run(config.maxTurns)                                               # loop
            if agent.stopping.is_set():
                print("\nstopped.", flush=True)
        finally:
            agent.close()
    finally:
        if stopping.is_set():  # Ctrl-C or SIGTERM: end now; what was not consolidated is dreamt over at the next start
            memory.session_end_s = 0
        elif memory.session_end_s:
            print(f"consolidating this session's memories (at most {memory.session_end_s:g} s; Ctrl-C ends it)...",
                  flush=True)
        memory.close(stopping)  # Ctrl-C now cuts the dream short; the rest is dreamt over at the next start
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        getattr(channel, "close", lambda: None)()
        if inspector is not None:
            inspector.close()
    return 0


def closed_output() -> int:
    """`python run.py | head`, or a pager quit: the output closed. main's own `finally` has closed the
    memory; say it on stderr instead of a BrokenPipeError traceback."""
    entry.stdout_gone()
    print("stopped: the output was closed", file=sys.stderr)
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(closed_output())
    except KeyboardInterrupt:  # Ctrl-C before the agent took it over (loading hyperon, the config): no traceback
        print("\nstopped before the agent started", file=sys.stderr)
        sys.exit(130)
