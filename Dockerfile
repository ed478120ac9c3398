# syntax=docker/dockerfile:1
# batchline in a container: `docker build -t batchline .`, then
#   docker run --rm -p 8080:8080 batchline                         (the embedded toy model)
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" -e MODEL_REPOSITORY=/models batchline
# The first stage packs the project as npm would publish it (prepack builds from a clean dist/);
# the second installs that package's production dependencies from the lockfile, and nothing else.

# BASE: any image with Node 20, npm and a `node` user; deploy/container/base-image.sh makes one
# with debootstrap where no registry can be reached (npm run test:container builds with it).
ARG BASE=node:20-bookworm-slim

FROM ${BASE} AS build
# npm run test:container removes this stage's image after a build by this label.
LABEL org.batchline.stage=build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
# No install scripts: onnxruntime-node's would download CUDA providers batchline does not use.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp \
  && mkdir /package \
  && tar -xzf /tmp/batchline-*.tgz -C /package --strip-components=1

FROM ${BASE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY --from=build /package ./
COPY package-lock.json .npmrc ./
# onnxruntime-node carries native libraries for five platforms (288 MB); only this one's stay
# (node_modules 343 MB -> 100 MB on linux/x64).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force \
  && cd node_modules/onnxruntime-node/bin/napi-v6 \
  && find . -mindepth 2 -maxdepth 2 -type d ! -path "./linux/$(node -p process.arch)" -exec rm -rf {} + \
  && mkdir /models && chown node:node /models
# A model repository (NAME/VERSION/model.onnx) mounted here; serve reads it with MODEL_REPOSITORY=/models.
VOLUME /models
USER node
EXPOSE 8080
# Node itself is PID 1 (exec form, no npx, no shell): SIGTERM reaches batchline, which drains
# within DRAIN_TIMEOUT_MS and exits 0. Its only child processes are its model instances under
# `--execution process`, which Node itself waits for (a killed one leaves no zombie), so nothing
# else needs reaping; `docker run --init` adds tini if you want it anyway.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/bin/batchline.js"]
CMD ["serve", "--no-ui"]
