# One image for the six services, the MCP endpoint and the console; docker-compose.yml picks one with its command.
FROM node:24.21-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json turbo.json tsconfig.json tsconfig.base.json ./
COPY packages ./packages
COPY services ./services
COPY test/package.json ./test/package.json
RUN npm ci --no-audit --no-fund
RUN npx turbo run build --output-logs=errors-only && npm prune --omit=dev

FROM node:24.21-bookworm-slim
ENV NODE_ENV=production HTTP_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app /app
USER node
CMD ["node", "services/registry/dist/main.js"]
