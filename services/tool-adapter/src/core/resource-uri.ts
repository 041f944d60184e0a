import { ToolplaneError, parseUriTemplate, type ToolDescriptor } from '@toolplane/contracts';

/**
 * The URI a read of a bound resource asks its server for: the resource's own URI, or its template expanded with the
 * call's arguments (RFC 6570; the pipeline has validated them against the schema the binding made of the template's
 * variables, so each is a string). A template or an argument the binding could not have admitted is INVALID_ARGUMENT.
 */
export function resourceUriOf(descriptor: Pick<ToolDescriptor, 'providerToolName' | 'resource'>, args: Readonly<Record<string, unknown>>): string {
  const uriTemplate = descriptor.resource?.uriTemplate;
  if (uriTemplate === undefined) return descriptor.providerToolName;
  const parsed = parseUriTemplate(uriTemplate);
  if (!parsed.ok) throw new ToolplaneError('INVALID_ARGUMENT', `the bound resource template cannot be expanded: ${parsed.problem}`);
  const values: Record<string, string> = {};
  for (const name of parsed.template.variables) {
    const value = args[name];
    if (typeof value !== 'string') throw new ToolplaneError('INVALID_ARGUMENT', `the resource template's variable ${name} needs a string argument`);
    values[name] = value;
  }
  return parsed.template.expand(values);
}
