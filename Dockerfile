# syntax=docker/dockerfile:1
# One image, both components: `intake operator ...` and `intake ingester ...`.

FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY cmd ./cmd
COPY common ./common
COPY console ./console
COPY ingester ./ingester
COPY kube ./kube
COPY operator ./operator
# The commit `intake version` prints (the build context has no .git): --build-arg INTAKE_COMMIT=$(git rev-parse HEAD).
ARG INTAKE_COMMIT
RUN npm run build && npm prune --omit=dev

FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
# A young generation of at most 2 x 4 MiB semi-spaces. V8 otherwise grows it to 2 x 32 MiB under a
# high allocation rate (every request allocates and drops its objects), which was a third of the
# ingester's peak memory under load and bought no throughput (docs/benchmarks.md). A V8 flag read
# when the heap is created: only the command line or NODE_OPTIONS can set it.
ENV NODE_OPTIONS=--max-semi-space-size=4
# Every allocation of 128 KiB or more in a mapping of its own, given back to the kernel when freed.
# glibc otherwise raises this threshold to the size of the largest block freed so far, and from
# then on keeps such blocks (remote write's queued requests, request bodies) in its heap, which it
# cannot shrink past one block still in use: a full remote write queue stayed resident after it
# drained (docs/remote-write.md, "Memory").
ENV MALLOC_MMAP_THRESHOLD_=131072
# At most two malloc arenas. glibc otherwise gives threads (V8's platform workers, libuv's pool)
# arenas of their own, each keeping freed memory resident: with 10,000 integrations and 10,000 API
# keys the ingester's RSS was 149-151 MiB with the default and 147-148 MiB with two
# (docs/benchmarks.md, "Scale: integrations per ingester").
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/api ./dist/api
COPY --from=build /src/dist/cmd ./dist/cmd
COPY --from=build /src/dist/common ./dist/common
COPY --from=build /src/dist/console ./dist/console
COPY --from=build /src/dist/ingester ./dist/ingester
COPY --from=build /src/dist/kube ./dist/kube
COPY --from=build /src/dist/operator ./dist/operator
# Non-root (the chart runs it as 65532 too); nothing is written to the filesystem, so a
# read-only root filesystem works.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "/app/dist/cmd/intake.js"]
CMD ["ingester", "--help"]
