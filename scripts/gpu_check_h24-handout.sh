#!/usr/bin/env bash
# The GPU evidence of the handout work: scripts/handout_check OUT (the student's copy end to end
# on this machine; its header says what it runs and checks).
exec "$(dirname "$0")/handout_check" "$@"
