# paratune image: paratune-operator and the `paratune` CLI (so `paratune trial-sim` can run as a
# trial on any CPU node to dry-run a campaign: manifests/samples/simulated-llama3-8b-anywhere.yaml).
#   docker build -t paratune/paratune:0.1.0 .      (the tag the chart's appVersion names)
# Multi-stage on Debian 12 (bookworm): the build stage has the compilers and -dev packages; the
# runtime stage only the shared libraries the two binaries load (checked with ldd at build time).
# Runs as the numeric non-root user 65532 and writes nothing to its root filesystem: logs go to
# stdout, HOME and TMPDIR are /tmp (an emptyDir in the Deployment), so readOnlyRootFilesystem
# holds.

FROM debian:bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev \
      libssl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Only the two shipped binaries (tests and benchmarks are configured, not built). Warnings stay
# warnings here: a newer compiler in a rebuilt base image must not break the image build.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DPARATUNE_WERROR=OFF \
    && cmake --build /build -j "$(nproc)" --target paratune paratune-operator \
    && mkdir -p /out \
    && install -m 0755 -s /build/bin/paratune /build/bin/paratune-operator /out/

FROM debian:bookworm-slim
# The runtime halves of the -dev packages above (their dependencies, e.g. cpprest's Boost
# libraries, come with them); ca-certificates for HTTPS to the API server and LLM endpoints.
RUN apt-get update && apt-get install -y --no-install-recommends \
      libcpprest2.10 libyaml-cpp0.7 libssl3 libspdlog1.10 libfmt9 ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/*
COPY --from=build /out/paratune /out/paratune-operator /usr/local/bin/
# Fail the build when a binary needs a library the runtime stage lacks; prove both start.
RUN ! ldd /usr/local/bin/paratune /usr/local/bin/paratune-operator | grep 'not found' \
    && /usr/local/bin/paratune --help >/dev/null
ENV HOME=/tmp TMPDIR=/tmp
WORKDIR /tmp
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/paratune-operator"]
