"""``python -m agent_tools``: the same as the ``agent-tools`` command."""

from agent_tools._cli import main

raise SystemExit(main())
