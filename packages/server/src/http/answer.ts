/** The HTTP layer's answers as plain values (`HttpAnswer`), and how one is thrown and sent. */
import type { FastifyReply } from "fastify";
import type { HttpAnswer } from "../runs/types.ts";

export const JSON_TYPE = "application/json; charset=utf-8";

/** Raised inside a handler to answer a refusal at once. */
export class Refusal {
  readonly answer: HttpAnswer;
  constructor(answer: HttpAnswer) {
    this.answer = answer;
  }
}

/** An error answer of the validators (`errorAnswer`) as an `HttpAnswer`: lower-case header names, a JSON body. */
export function fromError(a: { status: number; headers: Record<string, string>; body: unknown }): HttpAnswer {
  const headers: Record<string, string> = { "content-type": JSON_TYPE };
  for (const [k, v] of Object.entries(a.headers)) headers[k.toLowerCase()] = v;
  return { status: a.status, headers, body: JSON.stringify(a.body) };
}

/** A JSON answer (200 unless told). */
export function jsonAnswer(body: unknown, status = 200): HttpAnswer {
  return { status, headers: { "content-type": JSON_TYPE }, body: JSON.stringify(body) };
}

export function send(reply: FastifyReply, a: HttpAnswer): FastifyReply {
  return reply.code(a.status).headers(a.headers).send(a.body);
}
