# syntax=docker/dockerfile:1
#
# npugrade: one image for the server and the runners.
#
#   docker build -t npugrade .
#   docker buildx build --platform linux/arm64,linux/amd64 -t npugrade .
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
