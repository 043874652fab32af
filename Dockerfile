# syntax=docker/dockerfile:1
#
# npugrade: the server image (target runtime, the default) and two runner
# images whose kernels grade in the environment learners use:
#
#   docker build -t npugrade .                                   # server (and host-mode runners)
#   docker buildx build --platform linux/arm64,linux/amd64 -t npugrade .
#   docker build --target runner-cpu -t npugrade-runner-cpu .    # Debian 13, PyTorch 2.x
#   docker build --target runner-npu --build-arg CANN_IMAGE=<the tutorial's CANN image> \
#       -t npugrade-runner-npu .                                 # FROM the CANN image, arm64 binary
#
# The Go binary is cross-compiled on the build host (CGO_ENABLED=0: the
# SQLite driver is pure Go), so a multi-platform build does not emulate the
# compiler. The runtime stage installs, for the target platform, what a runner
# needs to execute notebooks: python3, jupyter nbconvert, ipykernel, torch
# (CPU) and bubblewrap for the kernel sandbox. Ascend NPU runners get the
# driver and CANN toolkit from the host (see docker-compose.yml, runner-npu);
# torch_npu must then be importable by /usr/bin/python3 (add it in a derived
# image or on a mounted site-packages path).

ARG GO_VERSION=1.26.8
# The CANN image the tutorial's learners run in (aarch64, Python 3.11, CANN
# 9.0.0, torch_npu 2.x); the npu runner stage is built FROM it, so learners
# are graded on the stack they used. Give the full reference your registry
# serves it under.
ARG CANN_IMAGE=cann_9.0.0_py3.11-A2-arm

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/npugrade ./cmd/npugrade

# The runner binary for Ascend hosts (linux/arm64), whatever the build host.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build-arm64
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux GOARCH=arm64 \
    go build -trimpath -ldflags="-s -w" -o /out/npugrade ./cmd/npugrade

# runner-cpu: a cpu runner whose system is the cpu grading environment
# (what `npugrade env build cpu` debootstraps): Debian 13 with its PyTorch
# 2.x (real torch.compile), the kernel side of nbconvert, and the CPU
# stand-in of the npugraph_ex backend imported by every kernel. Kernels run
# on the container's own system (--env host): the container is the
# environment.
FROM debian:trixie-slim AS runner-cpu
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        python3 \
        python3-torch \
        python3-numpy \
        python3-ipykernel \
        python3-jupyter-client \
        python3-nbconvert \
        python3-nbclient \
        python3-cffi-backend \
        bubblewrap \
        util-linux \
 && rm -rf /var/lib/apt/lists/*
# The stand-in, installed as `npugrade env build cpu` installs it
# (internal/envs/cpu/README.md); skipped while the package is not written.
COPY internal/envs/cpu/ /opt/npugrade/cpu/
RUN if [ -f /opt/npugrade/cpu/npugraph_ex_cpu/__init__.py ]; then \
      cp -r /opt/npugrade/cpu/npugraph_ex_cpu /usr/lib/python3/dist-packages/ \
      && find /usr/lib/python3/dist-packages/npugraph_ex_cpu -name __pycache__ -prune -exec rm -rf {} + \
      && mkdir -p /etc/ipython \
      && echo 'c.InteractiveShellApp.exec_lines = ["import npugraph_ex_cpu as _npugrade_stand_in; del _npugrade_stand_in"]' \
           > /etc/ipython/ipython_kernel_config.py; \
    fi
COPY --from=build /out/npugrade /usr/local/bin/npugrade
WORKDIR /srv/npugrade
# Root: the sandbox drops each kernel to an unprivileged uid itself.
USER root
ENTRYPOINT ["npugrade"]
CMD ["runner", "--profile", "cpu", "--env", "host"]

# runner-npu: FROM the CANN image learners use, with the linux/arm64 runner,
# the kernel side of nbconvert (pip: CANN images are Ubuntu or openEuler) and
# bubblewrap. The host gives the NPU devices and driver (docker-compose.yml,
# profile npu). On an NPU host without Docker, import the same image as an
# environment instead: npugrade env import npu-a2 --tar image.tar (docs/environments.md).
FROM ${CANN_IMAGE} AS runner-npu
USER root
RUN (command -v apt-get >/dev/null \
      && apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap util-linux \
      && rm -rf /var/lib/apt/lists/*) \
 || (command -v yum >/dev/null && yum install -y bubblewrap util-linux && yum clean all) \
 && python3 -m pip install --no-cache-dir nbconvert nbclient ipykernel
COPY --from=build-arm64 /out/npugrade /usr/local/bin/npugrade
WORKDIR /srv/npugrade
ENTRYPOINT ["npugrade"]
CMD ["runner", "--env", "host"]

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates \
        python3 \
        jupyter-core \
        jupyter-nbconvert \
        python3-nbconvert \
        python3-nbclient \
        python3-ipykernel \
        python3-torch \
        bubblewrap \
        util-linux \
 && rm -rf /var/lib/apt/lists/*

# The server runs as this unprivileged user. Runners in docker-compose.yml
# override it with root: the sandbox then drops the learner's kernel to an
# unprivileged uid itself (setpriv) and can use cgroups and a tmpfs work dir.
RUN groupadd --system --gid 10001 npugrade \
 && useradd --system --uid 10001 --gid npugrade --home-dir /srv/npugrade --shell /usr/sbin/nologin npugrade

WORKDIR /srv/npugrade
COPY --from=build /out/npugrade /usr/local/bin/npugrade
COPY exercises/ ./exercises/
COPY answers/ ./answers/
# data/ holds the default SQLite database (sqlite://data/npugrade.db) when
# no --db / NPUGRADE_DB is given.
RUN mkdir -p data && chown npugrade:npugrade data

ENV NPUGRADE_ADDR=0.0.0.0:8080
EXPOSE 8080
USER npugrade
ENTRYPOINT ["npugrade"]
CMD ["serve"]
