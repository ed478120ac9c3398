/**
 * Every relative link of the README and of docs/ leads somewhere: the file exists and, when the
 * link names a heading (`file.md#a-heading`), the file has that heading, slugged as GitHub slugs
 * it. Links to the web are not followed (the tests run offline).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function markdownUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a markdown file has: its headings' slugs, numbered as GitHub numbers repeats. */
function anchorsOf(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = slugOf(match[1] ?? '');
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  return anchors;
}

/** `[text](target)` links outside code blocks and code spans, with their line numbers. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const lines = markdown.split('\n');
  const links: { target: string; line: number }[] = [];
  let inFence = false;
  lines.forEach((text, index) => {
    if (text.startsWith('```')) inFence = !inFence;
    if (inFence) return;
    for (const match of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      links.push({ target: match[1] ?? '', line: index + 1 });
    }
  });
  return links;
}

const files = [join(ROOT, 'README.md'), ...markdownUnder(join(ROOT, 'docs'))];

describe('relative links in the README and docs/', () => {
  it('finds the documents', () => {
    expect(files.length).toBeGreaterThan(10);
  });

  it('lead to files that exist, and to headings those files have', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      const markdown = readFileSync(file, 'utf8');
      for (const { target, line } of linksOf(markdown)) {
        if (/^[a-z]+:/i.test(target)) continue;
        checked++;
        const [path = '', anchor] = target.split('#');
        const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        const where = `${relative(ROOT, file)}:${line}: ${target}`;
        if (!existsSync(resolved)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (
          anchor !== undefined &&
          resolved.endsWith('.md') &&
          !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)
        ) {
          broken.push(`${where} (no such heading in ${relative(ROOT, resolved)})`);
        }
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(broken).toEqual([]);
  });
});
