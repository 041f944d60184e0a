import { describe, expect, it } from 'vitest';
import { ToolplaneError, hasErrorCode, type FlowRunView } from '@toolplane/contracts';
import type { CliContext } from '../context.js';
import type { CliIo } from '../output.js';
import { runCli } from '../program.js';
import { parseRunState, runsCommands } from './runs.js';

// What `runs get|list` send, from their flags, to a recording stand-in for FlowRunner, and how they print its answers.

const token = 'header.payload.signature';

const run: FlowRunView = {
  tenant: 'acme',
  workspace: 'main',
  flowRunId: 'fr-0123',
  workItemId: 'wi-0123',
  toolCallId: 'call-1',
  invocationId: '00000000-0000-4000-8000-000000000001',
  toolId: 'flows.orders.refund',
  definitionName: 'orders.refund',
  definitionVersion: 3,
  flowId: 'refund',
  flowVersion: 2,
  state: 'Running',
  principal: 'user:alice@example.com',
  correlationId: 'corr-1',
  inputHash: 'a'.repeat(64),
  deadline: '2026-03-01T10:05:00.000Z',
  startedAt: '2026-03-01T10:00:00.000Z',
  version: 7,
  steps: [
    { stepId: 'lookup', status: 'Succeeded', toolId: 'orders.lookup', attempt: 1, invocationId: '00000000-0000-4000-8000-00000000000a' },
    {
      stepId: 'refund',
      status: 'Started',
      toolId: 'orders.refund',
      attempt: 1,
      invocation: { invocationId: '00000000-0000-4000-8000-00000000000b', attempt: 1, state: 'AwaitingApproval' },
    },
  ],
};

function harness(answers: Readonly<Record<string, unknown>>) {
  const sent: { operation: string; body: unknown; headers: Readonly<Record<string, string>> | undefined }[] = [];
  let out = '';
  const io: CliIo = { stdout: (text) => void (out += text), stderr: () => undefined, readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: token } };
  const context: CliContext = {
    io,
    json: false,
    scope: () => ({ tenant: 'acme', workspace: 'main' }),
    messaging: () => Promise.reject(new Error('no NATS in unit tests')),
    close: () => Promise.resolve(),
    print: (_data, human) => io.stdout(human()),
    call: (service, operation, schemas, body, options) => {
      expect(service).toBe('flows');
      sent.push({ operation, body: schemas.request.parse(body), headers: options?.headers });
      if (Object.hasOwn(answers, operation)) return Promise.resolve(schemas.reply.parse(answers[operation]));
      return Promise.reject(new ToolplaneError('NOT_FOUND', 'not answered'));
    },
  };
  return { run: (argv: string[]) => runCli(argv, io, [(program) => runsCommands(program, () => context)]), sent, out: () => out };
}

describe('toolplane runs', () => {
  it('get asks FlowRunner for the run as the operator and prints its steps with the live state of a running one', async () => {
    const cli = harness({ getRun: { run } });
    expect(await cli.run(['runs', 'get', 'fr-0123'])).toBe(0);
    expect(cli.sent).toEqual([{ operation: 'getRun', body: { flowRunId: 'fr-0123' }, headers: { Authorization: `Bearer ${token}` } }]);
    expect(cli.out()).toContain('orders.refund@3');
    expect(cli.out()).toContain('refund@2');
    expect(cli.out()).toMatch(/refund\s+Started\s+orders\.refund\s+1\s+00000000-0000-4000-8000-00000000000b\s+AwaitingApproval/);
  });

  it('list sends its filters and prints one line per run', async () => {
    const { steps: _steps, ...summary } = run;
    const cli = harness({ listRuns: { runs: [{ ...summary, stepCount: 2 }] } });
    expect(await cli.run(['runs', 'list', '--definition', 'orders.refund', '--state', 'RUNNING', '--limit', '5'])).toBe(0);
    expect(cli.sent[0]).toMatchObject({ operation: 'listRuns', body: { definitionName: 'orders.refund', state: 'Running', limit: 5 } });
    expect(cli.out()).toMatch(/fr-0123\s+Running\s+orders\.refund\s+refund@2\s+2/);
  });

  it('reads --state in any case and refuses another', () => {
    expect(parseRunState('uncertain')).toBe('Uncertain');
    let code = 'OK';
    try {
      parseRunState('done');
    } catch (error) {
      code = hasErrorCode(error) ? error.code : 'OTHER';
    }
    expect(code).toBe('INVALID_ARGUMENT');
  });
});
