# syntax=docker/dockerfile:1
# gpu-inventory-operator image: `docker build -t gpu-inventory-operator:0.1.0 .`
#
# The binary is dynamically linked against glibc (rustls/ring, no OpenSSL), so the runtime is distroless
# "cc" (glibc, libgcc; no shell, no package manager) as the nonroot user 65532. The builder is pinned to the
# same Debian release as the runtime (bookworm = debian12): the plain rust:1.95 tag is trixie, whose newer
# glibc would produce a binary that does not start on a debian12 runtime.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the crate registry and build artifacts between builds (BuildKit).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin gpu-inventory-operator \
    && install -D -m 0755 target/release/gpu-inventory-operator /out/gpu-inventory-operator

FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="gpu-inventory-operator" \
      org.opencontainers.image.description="Keeps an inventory of a Kubernetes cluster's GPU nodes and says what is wrong with them" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out/gpu-inventory-operator /usr/local/bin/gpu-inventory-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gpu-inventory-operator"]
CMD ["run"]
