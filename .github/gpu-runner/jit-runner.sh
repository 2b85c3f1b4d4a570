#!/usr/bin/env bash
# The GPU machine's side of the trust boundary (README, "Verified publishing"): serve the
# `gpu` job with ephemeral just-in-time runners, one registration per job.
#
# Each round asks GitHub for a just-in-time runner configuration in the runner group
# `gpu-publish` (which the organisation restricts to this repository's publish.yml on main),
# runs that runner for exactly one job, then deletes its work folder before the next round,
# so files a job leaves behind (a modified checkout, a planted tool) do not reach the next.
# Processes are another matter: the runner ends only those that keep its tracking variable,
# and torchrun's ranks or a job's background process can outlive the job. With a user
# systemd (loginctl enable-linger for this user), each round runs in a transient scope that
# is stopped afterwards: its cgroup takes every process the job started, and an unprivileged
# process cannot leave it. Without one, this script says so on every round. For a stronger
# reset, run it in a VM or container that is recreated each round.
#
# Run it as a dedicated unprivileged user (no sudo, no docker group), on the GPU machine:
#   GH_ORG=vramfarm RUNNER_GROUP_ID=7 GH_TOKEN_FILE=~/.config/gpu-runner/token \
#   RUNNER_DIR=~/actions-runner .github/gpu-runner/jit-runner.sh
# GH_TOKEN_FILE: a token allowed to manage the organisation's self-hosted runners (a GitHub
# App or fine-grained token with "Self-hosted runners: write"), kept on this machine only,
# readable by this user only; never a repository or Actions secret.
# RUNNER_DIR: the official actions/runner release, unpacked (./run.sh); not configured with
# config.sh (a configured runner is persistent: it would take job after job).
set -euo pipefail

: "${GH_ORG:?organisation that owns the repository}"
: "${RUNNER_GROUP_ID:?id of the runner group gpu-publish}"
: "${GH_TOKEN_FILE:?file holding the token that may register runners}"
: "${RUNNER_DIR:?folder of the unpacked actions/runner release}"
api="https://api.github.com/orgs/${GH_ORG}/actions/runners/generate-jitconfig"

while true; do
  name="gpu-$(hostname -s)-$(date +%s)"
  body=$(printf '{"name":"%s","runner_group_id":%d,"labels":["self-hosted","linux","x64","gpu"],"work_folder":"_work"}' \
    "$name" "$RUNNER_GROUP_ID")
  # The token goes in a header read from a file: it never appears on a command line.
  ACTIONS_RUNNER_INPUT_JITCONFIG=$(
    curl --fail --silent --show-error -X POST "$api" \
      -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$GH_TOKEN_FILE")") \
      -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28" \
      --data "$body" | python3 -c 'import json, sys; print(json.load(sys.stdin)["encoded_jit_config"])')
  export ACTIONS_RUNNER_INPUT_JITCONFIG  # read by run.sh as --jitconfig, kept off the command line
  if systemctl --user show-environment >/dev/null 2>&1; then
    (cd "$RUNNER_DIR" && systemd-run --user --scope --quiet --unit "$name" ./run.sh) ||
      echo "jit-runner: the runner exited with $?" >&2
    systemctl --user stop "$name.scope" 2>/dev/null || true  # what the job left running ends with its cgroup
  else
    echo "jit-runner: no user systemd: processes this job starts in the background may outlive it" >&2
    (cd "$RUNNER_DIR" && ./run.sh) || echo "jit-runner: the runner exited with $?" >&2
  fi
  unset ACTIONS_RUNNER_INPUT_JITCONFIG
  rm -rf "${RUNNER_DIR:?}/_work"
done
