# paratune image: the operator and the `paratune` CLI (so `paratune trial-sim` can run as a trial
# on any CPU node to dry-run a campaign). Multi-stage on Debian 12; runs as a non-root user and
# writes nothing to its root filesystem (readOnlyRootFilesystem-friendly: logs go to stdout).
FROM debian:bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev \
      libssl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPARATUNE_WERROR=OFF \
    && cmake --build build -j "$(nproc)" --target paratune paratune-operator \
    && strip build/bin/paratune build/bin/paratune-operator

FROM debian:bookworm-slim
# Runtime libraries only (the -dev packages' shared objects).
RUN apt-get update && apt-get install -y --no-install-recommends \
      libcpprest2.10 libyaml-cpp0.7 libssl3 libspdlog1.10 libfmt9 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin paratune
COPY --from=build /src/build/bin/paratune /src/build/bin/paratune-operator /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/paratune-operator"]
