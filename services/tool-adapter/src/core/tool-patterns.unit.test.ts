import { describe, expect, it } from 'vitest';
import { firstMatchingToolPattern, toolPatternMatches } from './tool-patterns.js';

describe('toolPatternMatches', () => {
  it.each([
    ['github.create_issue', 'github.create_issue', true],
    ['github.create_issue', 'github.create_issues', false],
    ['github.*', 'github.create_issue', true],
    ['github.*', 'github.repos.list', false],
    ['github.**', 'github.repos.list', true],
    ['github.**', 'gitlab.repos.list', false],
    ['*.read_*', 'files.read_text', true],
    ['*.read_*', 'files.write_text', false],
    ['**', 'anything.at.all', true],
    ['**.delete', 'k8s.namespaces.delete', true],
    ['**.delete', 'k8s.namespaces.deleted', false],
    ['a.**.z', 'a.z', true],
    ['a.**.z', 'a.b.c.z', true],
    ['g*b.x', 'github.x', true],
    ['g*h*b.x', 'github.x', true],
    ['gh*b.x', 'github.x', false],
    ['*', 'github.x', false],
  ])('%s vs %s → %s', (pattern, toolId, expected) => {
    expect(toolPatternMatches(pattern, toolId)).toBe(expected);
  });

  it('stays fast on adversarial globs', () => {
    const started = performance.now();
    expect(toolPatternMatches(`${'*a'.repeat(50)}b`, `${'a'.repeat(60)}.x`)).toBe(false);
    expect(toolPatternMatches(Array.from({ length: 40 }, () => '**').join('.'), Array.from({ length: 60 }, () => 'x').join('.'))).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('finds the first matching pattern', () => {
    expect(firstMatchingToolPattern(['gitlab.*', 'github.*', '**'], 'github.x')).toBe('github.*');
    expect(firstMatchingToolPattern([], 'github.x')).toBeUndefined();
  });
});
