#!/bin/sh
# A te-run that fails whenever it is called: a configuration whose op no
# provider of the plugin takes must be declined without running te-run.
echo "te-run: error: te-run-must-not-run.sh was called with: $*" >&2
exit 3
