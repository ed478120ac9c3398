import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { commandLineOf, environmentOf, shellWord, urlWithoutSecrets } from '../../../src/report/html/command-line.js';
import { SIMULATE_OPTIONS } from '../../../src/options/simulate.js';

/** What bash makes of `printf '%s\0' WORD`: the argument the pasted command would pass. */
function bashReads(quoted: string): string {
  const out = execFileSync('bash', ['-c', `printf '%s\\0' ${quoted}`], { encoding: 'utf8' });
  expect(out.endsWith('\0')).toBe(true);
  return out.slice(0, -1);
}

const HOSTILE = [
  'plain',
  '',
  'two words',
  "it's",
  '"double"',
  '$(touch /tmp/batchline-pwned)',
  '`id`',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a template
  '${HOME}',
  'a\\b',
  '*.json',
  '~/x',
  '{a,b}',
  '!!',
  'a;b|c&d',
  'line1\nline2',
  'tab\there',
  'cr\rhere',
  'bell\x07 del\x7f esc\x1b[31m',
  "quote ' and newline\n and $(x)",
  'sep\u2028\u2029',
  'é ü 日本',
];

describe('shellWord: a word of the command line a page shows for copy and paste', () => {
  it.each(HOSTILE.map((w) => [JSON.stringify(w), w]))('bash reads %s back as it was', (_name, word) => {
    expect(bashReads(shellWord(word))).toBe(word);
  });

  it('stays on one line: a page renders a newline as a space, and that space is what gets copied', () => {
    for (const word of HOSTILE) expect(shellWord(word)).not.toMatch(/[\x00-\x1f\x7f]/);
  });

  it('leaves plain words alone', () => {
    expect(shellWord('--rate')).toBe('--rate');
    expect(shellWord('http://127.0.0.1:8080/v1/infer')).toBe('http://127.0.0.1:8080/v1/infer');
  });
});

describe('commandLineOf: the footer of a page', () => {
  const argv = (...args: string[]) => ['node', '/usr/bin/batchline', ...args];

  it("hides a URL's password and the values of credential headers, in every way they can be written", () => {
    const secrets = {
      url: 'http://alice:hunter2@127.0.0.1:8080/v1/infer',
      headers: ['authorization: Bearer s3cr3t', 'X-Api-Key:k3y', 'x-session-token: t0k', 'content-type: text/plain'],
    };
    const line = commandLineOf(
      argv(
        'bench',
        '-H',
        'authorization: Bearer s3cr3t',
        '-HX-Api-Key:k3y',
        '--header=x-session-token: t0k',
        '--header',
        'content-type: text/plain',
        'http://alice:hunter2@127.0.0.1:8080/v1/infer',
      ),
      secrets,
    );
    expect(line).toBe(
      "batchline bench -H 'authorization: ***' '-HX-Api-Key: ***' '--header=x-session-token: ***' --header 'content-type: text/plain' 'http://alice:***@127.0.0.1:8080/v1/infer'",
    );
  });

  it('finds the password in a URL without a scheme and with an @ in the password', () => {
    const url = 'bob:p@ss:w0rd@localhost:8080/v1/infer?x=a@b';
    expect(commandLineOf(argv('bench', url), { url, headers: [] })).toBe(
      "batchline bench 'bob:***@localhost:8080/v1/infer?x=a@b'",
    );
  });

  // A token in the query is as common as one in a header (API gateways, signed URLs); it was shown as given.
  it('hides the values of query parameters whose names say they are credentials, keeping the rest', () => {
    const url =
      'http://127.0.0.1:8080/v1/infer?q=cats&api_key=k3y&Token=t0k&X-Amz-Signature=5ig&sig=s1g&access%5Ftoken=acc&page=2&password&monkey=b#frag?token=f';
    expect(commandLineOf(argv('bench', url), { url, headers: [] })).toBe(
      "batchline bench 'http://127.0.0.1:8080/v1/infer?q=cats&api_key=***&Token=***&X-Amz-Signature=***&sig=***&access%5Ftoken=***&page=2&password&monkey=***#frag?token=f'",
    );
    const bare = 'localhost:8080/v1/infer?auth=a&n=1';
    expect(commandLineOf(argv('bench', bare), { url: bare })).toBe(
      "batchline bench 'localhost:8080/v1/infer?auth=***&n=1'",
    );
    expect(urlWithoutSecrets('http://u:p@h/x?secret=s&design=d')).toBe('http://u:***@h/x?secret=***&design=d');
  });

  it('leaves a body or a URL without credentials as they are', () => {
    const body = '{"user":"a@b"}';
    expect(
      commandLineOf(argv('bench', '--body', body, 'http://x/v1/infer'), { url: 'http://x/v1/infer', headers: [] }),
    ).toBe(`batchline bench --body '${body}' http://x/v1/infer`);
  });
});

describe('environmentOf: the options an environment variable set, for the front of the command', () => {
  it('names the variables that set an option no flag gave, quoting the value alone', () => {
    const env = { MAX_BATCH_SIZE: '2', INSTANCES: '3', BATCH_POLICY: 'a b', PATH: '/bin', RATE: '' };
    const words = environmentOf(SIMULATE_OPTIONS, { instances: '4' }, env);
    expect(words).toEqual(['MAX_BATCH_SIZE=2', "BATCH_POLICY='a b'"]);
    expect(commandLineOf(['node', 'batchline', 'simulate', '--instances', '4'], {}, words)).toBe(
      "MAX_BATCH_SIZE=2 BATCH_POLICY='a b' batchline simulate --instances 4",
    );
  });
});
