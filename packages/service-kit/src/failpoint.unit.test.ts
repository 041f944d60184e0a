import { afterEach, describe, expect, it, vi } from 'vitest';
import { armFailpoints, failpoint, parseFailpoints } from './failpoint.js';

afterEach(() => {
  armFailpoints(undefined);
  vi.restoreAllMocks();
});

describe('parseFailpoints', () => {
  it('reads name=action pairs and ignores blanks', () => {
    expect([...parseFailpoints(' a.one=kill, ,b.two = stop ')]).toEqual([
      ['a.one', 'kill'],
      ['b.two', 'stop'],
    ]);
    expect(parseFailpoints(undefined).size).toBe(0);
    expect(parseFailpoints('').size).toBe(0);
  });

  it('refuses an unknown action or a malformed entry, naming the setting', () => {
    expect(() => parseFailpoints('a.one=explode')).toThrow(/^TOOLPLANE_FAILPOINTS: "a.one=explode" must be name=kill or name=stop$/);
    expect(() => parseFailpoints('a.one')).toThrow(/TOOLPLANE_FAILPOINTS/);
    expect(() => parseFailpoints('=kill')).toThrow(/TOOLPLANE_FAILPOINTS/);
    expect(() => parseFailpoints('a=kill=stop')).toThrow(/TOOLPLANE_FAILPOINTS/);
  });

  it('refuses a name the service does not have', () => {
    expect(() => parseFailpoints('a.typo=kill', ['a.one', 'a.two'])).toThrow('TOOLPLANE_FAILPOINTS: no failpoint is named a.typo (known: a.one, a.two)');
    expect(parseFailpoints('a.two=kill', ['a.one', 'a.two']).get('a.two')).toBe('kill');
  });
});

describe('failpoint', () => {
  it('does nothing unless armed', () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    failpoint('a.one');
    armFailpoints('a.two=kill');
    failpoint('a.one');
    expect(kill).not.toHaveBeenCalled();
  });

  it('signals this process once with the armed action, then is spent', () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    armFailpoints('a.one=kill,a.two=stop');
    failpoint('a.one');
    failpoint('a.one');
    failpoint('a.two');
    expect(kill.mock.calls).toEqual([
      [process.pid, 'SIGKILL'],
      [process.pid, 'SIGSTOP'],
    ]);
  });

  it('is disarmed again by an empty setting', () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    armFailpoints('a.one=kill');
    armFailpoints('');
    failpoint('a.one');
    expect(kill).not.toHaveBeenCalled();
  });
});
