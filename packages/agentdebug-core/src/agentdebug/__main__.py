"""`python -m agentdebug` runs the command line."""

from agentdebug.cli import main

main()
