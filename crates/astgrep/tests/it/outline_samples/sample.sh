#!/bin/bash
# Greets.
greet() {
  echo "hi $1"
}

function cleanup {
  rm -f /tmp/x
}

greet world
