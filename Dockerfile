# syntax=docker/dockerfile:1
#
# The svcbridge image: one static binary, every role (api, worker, migrate;
# dev too, though it is meant for a laptop), run as a non-root user on a
# distroless base with no shell.
#
#   docker build -t svcbridge .
#   docker run --rm -e DATABASE_URL=... -e TEMPORAL_ADDRESS=... -p 8080:8080 svcbridge          # api
#   docker run --rm -e DATABASE_URL=... -e TEMPORAL_ADDRESS=... svcbridge worker
#
# Settings are the environment variables of the README's configuration table.

# ---- build ----
FROM golang:1.26 AS build
WORKDIR /src
# Never download another toolchain: build with the image's Go (go.mod needs >= 1.26.4).
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The release the binary reports (version, /healthz, X-Svcbridge-Version,
# svcbridge_build_info): --build-arg VERSION=1.2.3, by default the Helm
# chart's appVersion, the tag the chart deploys. The context has no .git.
ARG VERSION=""
# A cold build compiles the embedded Temporal server and takes several minutes.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    version="${VERSION:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' deploy/helm/svcbridge/Chart.yaml)}" && \
    go build -trimpath -ldflags "-s -w -X svcbridge/buildinfo.release=$version" -o /out/svcbridge ./cmd/svcbridge && \
    go build -trimpath -ldflags "-s -w" -o /out/svcbridge-probe ./deploy/probe

# ---- run ----
# distroless static: CA certificates, tzdata, /etc/passwd with nonroot
# (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/svcbridge /out/svcbridge-probe /usr/local/bin/
USER 65532:65532
# In a container the API must listen on every interface, not loopback.
ENV LISTEN=0.0.0.0:8080
EXPOSE 8080
# No HEALTHCHECK here: the worker role has no HTTP port. Compose checks the api
# with `svcbridge-probe http://127.0.0.1:8080/readyz`; Kubernetes uses httpGet probes.
ENTRYPOINT ["/usr/local/bin/svcbridge"]
CMD ["api"]
