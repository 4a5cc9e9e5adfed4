// Candidate: fastify v5 doing the same work as nodeHttp.mjs. JSON bodies are read as a string
// and parsed with JSON.parse (a JSON-RPC server wants its own -32700 error, not fastify's 400),
// and the reply is sent as a pre-serialized string so fastify's serializer is not involved.
import Fastify from "fastify";
import { announce, dispatch, MAX_BODY_BYTES, onShutdown, portFromArgv } from "./common.mjs";

const port = portFromArgv();
const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, keepAliveTimeout: 30_000 });

app.removeAllContentTypeParsers();
app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) =>
  done(null, body),
);

app.post("/*", async (req, reply) => {
  const body = await dispatch(req.body);
  return reply.type("application/json").send(body);
});

await app.listen({ host: "127.0.0.1", port });
announce("fastify", port, `fastify ${app.version}`);
onShutdown(() => app.close());
