import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBatchline, succeeded } from '../../batchline-cli.js';

const exitOf = (args: string[]) => runBatchline(args);

describe('--html on the command line', () => {
  it('simulate says where it wrote the page, on stderr, so that --json - keeps stdout', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'batchline-html-cli-'));
    try {
      const page = join(dir, 'page.html');
      const { code, stderr, stdout } = await exitOf(['simulate', '--requests', '10', '--json', '-', '--html', page]);
      expect(code).toBe(0);
      expect(stderr).toBe(`wrote ${page} (${Math.ceil(statSync(page).size / 1024)} KB)\n`);
      expect(JSON.parse(stdout)).toHaveProperty('seed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("simulate's page names the environment variables that set its options, so its command runs the same", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'batchline-html-cli-'));
    try {
      const page = join(dir, 'page.html');
      succeeded(await runBatchline(['simulate', '--requests', '10', '--html', page], { env: { MAX_BATCH_SIZE: '2' } }));
      expect(readFileSync(page, 'utf8')).toContain(
        '<code id="generated-by">MAX_BATCH_SIZE=2 batchline simulate --requests 10',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('simulate refuses a page it could not write before it runs, exit 2 naming --html', async () => {
    const { code, stderr, stdout } = await exitOf([
      'simulate',
      '--requests',
      '10',
      '--html',
      '/nonexistent-dir/page.html',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain("--html: cannot write '/nonexistent-dir/page.html': no directory /nonexistent-dir");
    expect(stdout).toBe('');
    expect(existsSync('/nonexistent-dir/page.html')).toBe(false);
  });

  it('bench refuses it before sending a request', async () => {
    const { code, stderr } = await exitOf([
      'bench',
      '-n',
      '5',
      '--html',
      '/nonexistent-dir/page.html',
      'http://127.0.0.1:1/',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain("--html: cannot write '/nonexistent-dir/page.html'");
  });

  it("bench's page shows the command without the URL's password or the credential headers' values", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'batchline-html-cli-'));
    try {
      const page = join(dir, 'page.html');
      // Port 1 refuses at once (a route bench does not wait on, as it waits for an inference
      // route's server to start): the run fails, and its page is written all the same.
      await exitOf([
        'bench',
        '-n',
        '2',
        '--warmup',
        '0',
        '-H',
        'authorization: Bearer s3cr3t-token',
        '-H',
        'x-api-key: k3y-value',
        '--html',
        page,
        'http://alice:hunter2@127.0.0.1:1/v1/stats?api_key=qu3ry-k3y&n=1',
      ]);
      const html = readFileSync(page, 'utf8');
      // The query's key was in the footer and the page's title.
      for (const secret of ['s3cr3t-token', 'k3y-value', 'hunter2', 'qu3ry-k3y']) expect(html).not.toContain(secret);
      expect(html).toContain("-H 'authorization: ***' -H 'x-api-key: ***'");
      expect(html).toContain("'http://alice:***@127.0.0.1:1/v1/stats?api_key=***&n=1'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
