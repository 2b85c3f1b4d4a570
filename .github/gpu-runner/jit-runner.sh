#!/usr/bin/env bash
# The GPU machine's side of the trust boundary (README, "Verified publishing", "What a GPU
# round can leave behind"): serve the `gpu` job with ephemeral just-in-time runners, one
# registration per job, each round starting clean.
#
# Two users. This script runs as the BROKER user, the only one that can read the token
# that registers runners (GH_TOKEN_FILE, mode 0600, owned by the broker; the script refuses
# anything else). Each round it asks GitHub for one just-in-time runner configuration (group
# `gpu-publish`, one job, then the registration is gone) and starts the runner as JOB_USER,
# another unprivileged user who cannot read the token: job code gets the single-use config,
# never the token. JOB_USER's account home is not writable (e.g. /nonexistent); each round
# runs with:
#   - a fresh HOME and a fresh copy of the runner (mktemp), removed afterwards, so nothing a
#     job writes there (~/.config/pip/pip.conf, a notebook store, a planted tool) reaches
#     the next round;
#   - an environment built from nothing (env -i): pip's configuration and cache off
#     (PIP_CONFIG_FILE=/dev/null, PIP_NO_CACHE_DIR=1), XDG folders inside that HOME, the
#     guide's notebook store off (GUIDE_NOTEBOOK_STORE=off);
#   - the config handed on standard input, never on a command line or in sudo's environment;
# and after it every process of JOB_USER is killed (a rank or a detached process does not
# outlive the round) and JOB_USER's files in /tmp, /var/tmp and /dev/shm are deleted.
# A round cannot schedule work into a later one: the script refuses to start, and stops after
# a round, unless JOB_USER is listed in cron.deny and at.deny (and in no cron.allow or
# at.allow) and has no lingering systemd user manager (/var/lib/systemd/linger/JOB_USER).
# Stronger still: run each round in a VM or container created afresh (README).
#
# Set-up (once, by the machine's administrator): a sudoers rule letting BROKER run commands
# as JOB_USER only, without a password:  broker ALL=(gpu-job) NOPASSWD: ALL
# JOB_USER denied cron and at, lingering off:
#   echo gpu-job >> /etc/cron.deny; echo gpu-job >> /etc/at.deny; loginctl disable-linger gpu-job
# unprivileged user namespaces allowed (the gpu job's scopes, verify/scope.py; Ubuntu 24.04):
#   sysctl -w kernel.apparmor_restrict_unprivileged_userns=0  (and in /etc/sysctl.d/)
#   GH_ORG=vramfarm RUNNER_GROUP_ID=7 GH_TOKEN_FILE=~/.config/gpu-runner/token \
#   RUNNER_DIR=/opt/actions-runner JOB_USER=gpu-job .github/gpu-runner/jit-runner.sh
# GH_TOKEN_FILE: a token allowed to manage the organisation's self-hosted runners (a GitHub
# App or fine-grained token with "Self-hosted runners: write"); never a repository or
# Actions secret. RUNNER_DIR: the official actions/runner release, unpacked, readable by
# JOB_USER, not configured with config.sh (a configured runner is persistent: it would
# take job after job). ROUNDS: stop after that many rounds (default: never).
set -euo pipefail

: "${GH_ORG:?organisation that owns the repository}"
: "${RUNNER_GROUP_ID:?id of the runner group gpu-publish}"
: "${GH_TOKEN_FILE:?file holding the token that may register runners}"
: "${RUNNER_DIR:?folder of the unpacked actions/runner release}"
: "${JOB_USER:?the user that runs the jobs (not this one: it must not read the token)}"
api="${GH_API:-https://api.github.com}/orgs/${GH_ORG}/actions/runners/generate-jitconfig"
rounds="${ROUNDS:-0}"
scratch="${ROUND_ROOT:-/var/tmp}"
cron_deny="${CRON_DENY:-/etc/cron.deny}"
at_deny="${AT_DENY:-/etc/at.deny}"
linger_dir="${LINGER_DIR:-/var/lib/systemd/linger}"

if [ "$JOB_USER" = "$(id -un)" ]; then
  echo "jit-runner: JOB_USER is this user: job code could read the token" >&2
  exit 2
fi
if [ "$(stat -c '%U %a' "$GH_TOKEN_FILE")" != "$(id -un) 600" ]; then
  echo "jit-runner: $GH_TOKEN_FILE must be owned by $(id -un) with mode 600" >&2
  exit 2
fi

as_job() { sudo --non-interactive --user="$JOB_USER" -- "$@"; }

# Nothing a round schedules may run in a later one: no crontab, no at job, no systemd user
# manager kept alive by lingering (its timers and services would outlive the round's kill).
cannot_schedule() {
  local deny allow
  for deny in "$cron_deny" "$at_deny"; do
    allow="${deny%deny}allow"
    if ! grep -qxF -- "$JOB_USER" "$deny" 2>/dev/null; then
      echo "jit-runner: $JOB_USER is not listed in $deny: a round could schedule a job into the next" >&2
      return 1
    fi
    if grep -qxF -- "$JOB_USER" "$allow" 2>/dev/null; then
      echo "jit-runner: $JOB_USER is listed in $allow: a round could schedule a job into the next" >&2
      return 1
    fi
  done
  if [ -e "$linger_dir/$JOB_USER" ]; then
    echo "jit-runner: lingering is on for $JOB_USER ($linger_dir/$JOB_USER): its user services outlive a round;" \
      "run loginctl disable-linger $JOB_USER" >&2
    return 1
  fi
}
cannot_schedule || exit 2

# JOB_USER's groups: its own and those that open the GPUs' device files (video, render), no
# other. A group such as docker, lxd or libvirt lets its members talk to a daemon that runs as
# root, over a socket that the scope's read-only file system (verify/scope.py) still lets a
# process connect to: a job in such a group is root on the machine, outside every scope.
only_gpu_groups() {
  local group primary
  if ! primary=$(id -gn -- "$JOB_USER"); then
    echo "jit-runner: no user $JOB_USER" >&2
    return 1
  fi
  for group in $(id -Gn -- "$JOB_USER"); do
    case " $primary video render " in
      *" $group "*) ;;
      *)
        echo "jit-runner: $JOB_USER is in group $group: only its own group and video, render;" \
          "a group that opens a daemon's socket (docker, lxd, libvirt) is root outside the job's scopes" >&2
        return 1
        ;;
    esac
  done
}
only_gpu_groups || exit 2

round=0
while [ "$rounds" -eq 0 ] || [ "$round" -lt "$rounds" ]; do
  round=$((round + 1))
  name="gpu-$(hostname -s)-$(date +%s)"
  body=$(printf '{"name":"%s","runner_group_id":%d,"labels":["self-hosted","linux","x64","gpu"],"work_folder":"_work"}' \
    "$name" "$RUNNER_GROUP_ID")
  # The token goes in a header read from a file: it never appears on a command line.
  jitconfig=$(
    curl --fail --silent --show-error -X POST "$api" \
      -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$GH_TOKEN_FILE")") \
      -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28" \
      --data "$body" | python3 -c 'import json, sys; print(json.load(sys.stdin)["encoded_jit_config"])')
  home=$(as_job mktemp -d "$scratch/gpu-round-home.XXXXXX")
  runner=$(as_job mktemp -d "$scratch/gpu-round-runner.XXXXXX")
  as_job cp -a "$RUNNER_DIR/." "$runner/"
  # shellcheck disable=SC2016  # expanded by the job user's shell, from its own arguments
  printf '%s\n' "$jitconfig" | as_job /usr/bin/env -i \
    HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" XDG_DATA_HOME="$home/.local/share" \
    PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 GUIDE_NOTEBOOK_STORE=off \
    /bin/bash -c 'IFS= read -r ACTIONS_RUNNER_INPUT_JITCONFIG && export ACTIONS_RUNNER_INPUT_JITCONFIG && cd "$1" && exec ./run.sh' \
    jit-round "$runner" || echo "jit-runner: the runner exited with $?" >&2
  unset jitconfig
  as_job /bin/kill -KILL -1 2>/dev/null || true  # every process of JOB_USER: nothing outlives the round
  as_job rm -rf "$home" "$runner"
  as_job find /tmp /var/tmp /dev/shm -xdev -user "$JOB_USER" -delete 2>/dev/null || true
  cannot_schedule || exit 2  # a round turned lingering on (or the lists changed): no next round
done
