# syntax=docker/dockerfile:1
# Multi-stage: dependencies are installed (and checked by tsc) in a build stage; the runtime
# image has production dependencies and the TypeScript sources, which Node 24 runs directly.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc --noEmit

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/api ./api
COPY --from=build /app/workers ./workers
COPY --from=build /app/shared ./shared
COPY --from=build /app/scripts ./scripts
RUN mkdir -p /data/storage && chown node:node /data/storage
USER node
EXPOSE 3000
CMD ["node", "api/main.ts"]
